package emit

import "gopkg.in/yaml.v3"

// The parts of Kubeflow's TFJob and PyTorchJob (kubeflow.org/v1) that
// tfhive writes, with the operator's field names; the tests check what
// they produce against the operator's CRD schemas. Fields are in the
// order people read them in.

type kubeJob struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   kubeMeta `yaml:"metadata"`
	Spec       kubeSpec `yaml:"spec"`
}

type kubeMeta struct {
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace,omitempty"`
}

type kubeSpec struct {
	RunPolicy     runPolicy `yaml:"runPolicy"`
	SuccessPolicy string    `yaml:"successPolicy,omitempty"`
	// One of the two, by kind.
	TFReplicaSpecs      *replicaSpecs `yaml:"tfReplicaSpecs,omitempty"`
	PyTorchReplicaSpecs *replicaSpecs `yaml:"pytorchReplicaSpecs,omitempty"`
}

type runPolicy struct {
	CleanPodPolicy        string `yaml:"cleanPodPolicy"`
	ActiveDeadlineSeconds int64  `yaml:"activeDeadlineSeconds,omitempty"`
}

// replicaSpecs is the operator's map of replica type to spec, as a struct
// so that the roles come in tfhive's order.
type replicaSpecs struct {
	PS        *replicaSpec `yaml:"PS,omitempty"`
	Chief     *replicaSpec `yaml:"Chief,omitempty"`
	Master    *replicaSpec `yaml:"Master,omitempty"`
	Worker    *replicaSpec `yaml:"Worker,omitempty"`
	Evaluator *replicaSpec `yaml:"Evaluator,omitempty"`
}

type replicaSpec struct {
	Replicas      int         `yaml:"replicas"`
	RestartPolicy string      `yaml:"restartPolicy"`
	Template      podTemplate `yaml:"template"`
}

type podTemplate struct {
	Spec podSpec `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds int64       `yaml:"terminationGracePeriodSeconds"`
	Containers                    []container `yaml:"containers"`
}

type container struct {
	Name       string        `yaml:"name"`
	Image      quoted        `yaml:"image"`
	Command    []quoted      `yaml:"command"`
	Args       []quoted      `yaml:"args,omitempty"`
	WorkingDir quoted        `yaml:"workingDir,omitempty"`
	Env        []kubeEnv     `yaml:"env,omitempty"`
	Ports      []kubePort    `yaml:"ports"`
	Resources  *kubeResource `yaml:"resources,omitempty"`
}

type kubeEnv struct {
	Name      string     `yaml:"name"`
	Value     *quoted    `yaml:"value,omitempty"`
	ValueFrom *envSource `yaml:"valueFrom,omitempty"`
}

type envSource struct {
	SecretKeyRef *secretKeyRef `yaml:"secretKeyRef,omitempty"`
	FieldRef     *fieldRef     `yaml:"fieldRef,omitempty"`
}

type secretKeyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type fieldRef struct {
	FieldPath string `yaml:"fieldPath"`
}

type kubePort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

type kubeResource struct {
	Limits map[string]int `yaml:"limits"`
}

// quoted is a string the user gave: always written double-quoted, so that
// YAML 1.1 readers (Kubernetes' own) and 1.2 readers read the same text
// ("on", "0755" and "1e3" stay strings).
type quoted string

func (q quoted) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Tag: "!!str", Value: string(q)}, nil
}
