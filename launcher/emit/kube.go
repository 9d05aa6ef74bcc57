package emit

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tfhive/tfhive/schedule"
)

// Kubeflow's training operator names every pod and its Service
// NAME-ROLE-INDEX, sets TF_CONFIG (TFJob) or MASTER_ADDR, MASTER_PORT,
// WORLD_SIZE and RANK (PyTorchJob) itself, and labels each pod with its
// index among its role's replicas.
const (
	replicaIndexLabel = "training.kubeflow.org/replica-index"
	tfContainer       = "tensorflow"
	tfPortName        = "tfjob-port"
	torchContainer    = "pytorch"
	torchPortName     = "pytorchjob-port"
)

// A placeholder's value that only the pod knows is written as a reference
// $(VAR) to the container's environment, which Kubernetes expands in
// command, args and env values. Inside tfhive these references are NUL
// markers, which no argument can hold, so that every other $ can be
// doubled ($$ is Kubernetes' literal $).
func kubeRef(v string) string { return "\x00" + v + "\x00" }

// refuseMark marks a placeholder the target cannot fill.
const refuseMark = "\x00!"

// kubeRole is one replica spec to write.
type kubeRole struct {
	kind     string // the operator's replica type: PS, Chief, Master, Worker, Evaluator
	role     string // tfhive's role for its tasks: ps, chief, worker, evaluator
	replicas int
	gpus     int
	// firstIndex is the tfhive index of the role's replica 0: a
	// PyTorchJob's Worker replicas start at worker:1 when worker:0 is the
	// Master.
	firstIndex int
}

func kubeRoles(o *Options) []kubeRole {
	r := &o.Request
	var roles []kubeRole
	add := func(kind, role string, n, gpus, first int) {
		if n > 0 {
			roles = append(roles, kubeRole{kind, role, n, gpus, first})
		}
	}
	if o.Target == TFJob {
		add("PS", schedule.RolePS, r.PS, r.GPUsPerPS, 0)
		if r.Chief {
			add("Chief", schedule.RoleChief, 1, r.GPUsPerWorker, 0)
		}
		add("Worker", schedule.RoleWorker, r.Workers, r.GPUsPerWorker, 0)
		if r.Evaluator {
			add("Evaluator", schedule.RoleEvaluator, 1, r.GPUsPerWorker, 0)
		}
		return roles
	}
	// Rank 0 is the operator's Master: the chief, else worker 0.
	if r.Chief {
		add("Master", schedule.RoleChief, 1, r.GPUsPerWorker, 0)
		add("Worker", schedule.RoleWorker, r.Workers, r.GPUsPerWorker, 0)
	} else {
		add("Master", schedule.RoleWorker, 1, r.GPUsPerWorker, 0)
		add("Worker", schedule.RoleWorker, r.Workers-1, r.GPUsPerWorker, 1)
	}
	return roles
}

// serviceHosts lists the addresses the operator gives a role's replicas:
// their Services, by the short name pods resolve in the job's namespace.
func serviceHosts(name string, role kubeRole, port int) []string {
	var hs []string
	for i := range role.replicas {
		hs = append(hs, fmt.Sprintf("%s-%s-%d:%d", name, strings.ToLower(role.kind), i, port))
	}
	return hs
}

func kubeManifest(o *Options) (string, error) {
	r := &o.Request
	name := o.kubeName()
	env, _ := parseEnv(o.Env)
	roles := kubeRoles(o)
	for _, role := range roles {
		if svc := fmt.Sprintf("%s-%s-%d", name, strings.ToLower(role.kind), role.replicas-1); len(svc) > 63 {
			return "", usage("use a shorter --name", "--name %q is too long: the operator names a pod and its Service %s, over 63 characters", name, svc)
		}
	}
	port := r.PortLo
	job := kubeJob{
		APIVersion: "kubeflow.org/v1",
		Metadata:   kubeMeta{Name: name, Namespace: o.Namespace},
		Spec:       kubeSpec{RunPolicy: runPolicy{CleanPodPolicy: "Running", ActiveDeadlineSeconds: seconds(o.Timeout)}},
	}
	specs := &replicaSpecs{}
	var cluster schedule.ClusterSpec
	if o.Target == TFJob {
		job.Kind = "TFJob"
		job.Spec.TFReplicaSpecs = specs
		if !r.Chief {
			// tfhive run's rule: without a chief, every worker must
			// succeed; the operator's default waits for worker 0 only.
			job.Spec.SuccessPolicy = "AllWorkers"
		}
		for _, role := range roles {
			switch role.kind {
			case "PS":
				cluster.PS = serviceHosts(name, role, port)
			case "Chief":
				cluster.Chief = serviceHosts(name, role, port)
			case "Worker":
				cluster.Worker = serviceHosts(name, role, port)
			}
		}
	} else {
		job.Kind = "PyTorchJob"
		job.Spec.PyTorchReplicaSpecs = specs
	}
	for _, role := range roles {
		c, err := kubeContainer(o, name, role, port, cluster, env)
		if err != nil {
			return "", err
		}
		spec := &replicaSpec{
			Replicas: role.replicas,
			// tfhive restarts no task; a failed one decides the run.
			RestartPolicy: "Never",
			Template:      podTemplate{Spec: podSpec{TerminationGracePeriodSeconds: seconds(o.Grace), Containers: []container{c}}},
		}
		switch role.kind {
		case "PS":
			specs.PS = spec
		case "Chief":
			specs.Chief = spec
		case "Master":
			specs.Master = spec
		case "Worker":
			specs.Worker = spec
		case "Evaluator":
			specs.Evaluator = spec
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# tfhive run %s as a Kubeflow %s (kubeflow.org/v1), from `tfhive plan --emit %s`.\n", r.RunID, job.Kind, o.Target)
	fmt.Fprintf(&b, "# Submit it with `kubectl create -f FILE`; it needs Kubeflow's training operator.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&job); err != nil {
		return "", fmt.Errorf("writing the %s: %w", job.Kind, err)
	}
	if err := enc.Close(); err != nil {
		return "", fmt.Errorf("writing the %s: %w", job.Kind, err)
	}
	return b.String(), nil
}

// kubeContainer is the one container of a role's pods.
func kubeContainer(o *Options, name string, role kubeRole, port int, cluster schedule.ClusterSpec, env []envVar) (container, error) {
	r := &o.Request
	gpus := make([]string, role.gpus)
	for i := range gpus {
		gpus[i] = strconv.Itoa(i) // a pod sees its own GPUs as 0…n-1
	}
	vals := map[string]string{
		"run_id": name,
		"host":   kubeRef("TFHIVE_NODE"),
		"gpus":   strings.Join(gpus, ","),
	}
	index := kubeRef("TFHIVE_TASK_INDEX")
	if role.replicas == 1 && role.kind != "Worker" {
		index = strconv.Itoa(role.firstIndex)
	} else if role.firstIndex != 0 {
		index = refuseMark + "task_index\x00"
	}
	vals["task_index"] = index
	c := container{Name: tfContainer, Image: quoted(o.Image), WorkingDir: quoted(o.Workdir)}
	var list envList
	if o.Target == TFJob {
		c.Ports = []kubePort{{tfPortName, port}}
		for k, v := range map[string]string{
			"job_name":     role.role,
			"ps_hosts":     strings.Join(cluster.PS, ","),
			"worker_hosts": strings.Join(cluster.Worker, ","),
			"chief_hosts":  strings.Join(cluster.Chief, ","),
			"cluster_spec": cluster.JSON(),
			"tf_config":    kubeRef("TF_CONFIG"),
			"port":         strconv.Itoa(port),
		} {
			vals[k] = v
		}
		list.set("PYTHONUNBUFFERED", "1")
	} else {
		c.Name = torchContainer
		c.Ports = []kubePort{{torchPortName, port}}
		for _, v := range []string{"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"} {
			vals[strings.ToLower(v)] = kubeRef(v)
		}
		// The operator sets PYTHONUNBUFFERED itself.
	}
	argv, err := schedule.Substitute(r.Command, vals, r.TFFlags)
	if err != nil {
		return c, err
	}
	for _, a := range argv {
		if i := strings.Index(a, refuseMark); i >= 0 {
			ph := a[i+len(refuseMark):]
			ph = ph[:strings.IndexByte(ph, 0)]
			return c, usage("use {rank}, or add --chief (then the workers' index is their pod's)",
				"{%s} has no value in a PyTorchJob's Worker pods without --chief: worker:N is pod N-1", ph)
		}
	}

	for _, e := range env {
		if e.Secret {
			list.secret(e.Name, o.Secret)
		} else {
			list.set(e.Name, e.Value)
		}
	}
	list.set("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
	if role.gpus == 0 {
		// As tfhive run does: a CPU task sees no GPU, even where the
		// image and runtime would show it all of the node's.
		list.set("CUDA_VISIBLE_DEVICES", "")
	}
	list.set("TFHIVE_RUN_ID", name)
	task := role.role + ":" + index
	if index == kubeRef("TFHIVE_TASK_INDEX") {
		list.field("TFHIVE_TASK_INDEX", "metadata.labels['"+replicaIndexLabel+"']")
	}
	if !strings.HasPrefix(index, refuseMark) {
		list.set("TFHIVE_TASK", task)
	}
	if o.Target == PyTorchJob {
		// One rank per pod, as a torchrun with one process per node.
		list.set("LOCAL_RANK", "0")
		list.set("LOCAL_WORLD_SIZE", "1")
	}
	if strings.Contains(strings.Join(argv, " "), kubeRef("TFHIVE_NODE")) {
		list.field("TFHIVE_NODE", "spec.nodeName")
	}
	c.Env = list.vars

	cmd := argv
	if strings.TrimSpace(o.Setup) != "" {
		// As tfhive run does: the snippet runs in the task's shell, bash,
		// and its failure is the task's (exit 126).
		script := "{\n" + o.Setup + "\n} || { echo 'tfhive: setup failed' >&2; exit 126; }\nexec \"$@\""
		cmd = []string{"bash", "-c", script, "tfhive-setup"}
		c.Args = kubeWords(argv)
	}
	c.Command = kubeWords(cmd)
	if role.gpus > 0 {
		c.Resources = &kubeResource{Limits: map[string]int{"nvidia.com/gpu": role.gpus}}
	}
	return c, nil
}

// kubeWords writes arguments for Kubernetes: every $ doubled, so that it
// stays a $, and tfhive's references as $(VAR).
func kubeWords(args []string) []quoted {
	out := make([]quoted, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, "$", "$$")
		parts := strings.Split(a, "\x00")
		// Markers come in pairs: odd parts are variable names.
		for j := 1; j < len(parts); j += 2 {
			parts[j] = "$(" + parts[j] + ")"
		}
		out[i] = quoted(strings.Join(parts, ""))
	}
	return out
}

// envList is a container's environment; setting a name again moves it to
// the end with its new value, so that later sources win and references
// $(VAR) see what came before.
type envList struct{ vars []kubeEnv }

func (l *envList) add(e kubeEnv) {
	for i, v := range l.vars {
		if v.Name == e.Name {
			l.vars = append(l.vars[:i], l.vars[i+1:]...)
			break
		}
	}
	l.vars = append(l.vars, e)
}

func (l *envList) set(name, value string) {
	v := kubeWords([]string{value})[0]
	l.add(kubeEnv{Name: name, Value: &v})
}

func (l *envList) secret(name, secret string) {
	l.add(kubeEnv{Name: name, ValueFrom: &envSource{SecretKeyRef: &secretKeyRef{Name: secret, Key: name}}})
}

func (l *envList) field(name, path string) {
	l.add(kubeEnv{Name: name, ValueFrom: &envSource{FieldRef: &fieldRef{FieldPath: path}}})
}

// checkManifest reads the manifest back into the types it was written
// from, refusing any field they do not have, and writes it again: the
// two must agree.
func checkManifest(text string) error {
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	var job kubeJob
	if err := dec.Decode(&job); err != nil {
		return fmt.Errorf("the manifest does not read back: %w", err)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&job); err != nil {
		return fmt.Errorf("the manifest does not read back: %w", err)
	}
	enc.Close()
	if _, body, _ := strings.Cut(text, "\napiVersion:"); "apiVersion:"+body != b.String() {
		return fmt.Errorf("the manifest reads back differently")
	}
	return nil
}
