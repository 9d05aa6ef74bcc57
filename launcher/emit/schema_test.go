package emit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// The manifests are checked as Kubernetes would check them, since no
// cluster can run here: against the operator's CRD schema (the API
// server's validation, unknown fields refused as with --validate=strict)
// and the operator's admission webhook rules.

var (
	schemasOnce sync.Once
	schemas     map[string]*jsonschema.Schema // by kind
	schemasErr  error
)

func crdSchema(kind string) (*jsonschema.Schema, error) {
	schemasOnce.Do(func() {
		schemas = map[string]*jsonschema.Schema{}
		for kind, file := range map[string]string{"TFJob": "kubeflow.org_tfjobs.yaml", "PyTorchJob": "kubeflow.org_pytorchjobs.yaml"} {
			data, err := os.ReadFile(filepath.Join("testdata", "crds", file))
			if err != nil {
				schemasErr = err
				return
			}
			var crd struct {
				Spec struct {
					Versions []struct {
						Name   string
						Schema struct {
							OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
						}
					}
				}
			}
			if err := yaml.Unmarshal(data, &crd); err != nil {
				schemasErr = fmt.Errorf("%s: %w", file, err)
				return
			}
			if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1" {
				schemasErr = fmt.Errorf("%s: want exactly version v1", file)
				return
			}
			root := strict(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
			doc, err := jsonValue(root)
			if err != nil {
				schemasErr = err
				return
			}
			c := jsonschema.NewCompiler()
			if err := c.AddResource(file, doc); err != nil {
				schemasErr = err
				return
			}
			if schemas[kind], err = c.Compile(file); err != nil {
				schemasErr = fmt.Errorf("%s: %w", file, err)
				return
			}
		}
	})
	return schemas[kind], schemasErr
}

// strict refuses unknown fields wherever the API server would prune or,
// with field validation Strict (kubectl's default), refuse them: in every
// object whose properties are listed and that does not keep unknown
// fields.
func strict(v any) any {
	switch s := v.(type) {
	case map[string]any:
		for k, x := range s {
			if k != "enum" && k != "default" && k != "example" {
				s[k] = strict(x)
			}
		}
		_, props := s["properties"]
		_, extra := s["additionalProperties"]
		_, keep := s["x-kubernetes-preserve-unknown-fields"]
		if props && !extra && !keep {
			s["additionalProperties"] = false
		}
	case []any:
		for i, x := range s {
			s[i] = strict(x)
		}
	}
	return v
}

// jsonValue turns YAML data into the JSON values the validator takes.
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// validateManifest checks one emitted manifest.
func validateManifest(t *testing.T, text string) {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("not YAML: %v", err)
	}
	if doc["apiVersion"] != "kubeflow.org/v1" {
		t.Errorf("apiVersion %v", doc["apiVersion"])
	}
	kind, _ := doc["kind"].(string)
	sch, err := crdSchema(kind)
	if err != nil {
		t.Fatal(err)
	}
	if sch == nil {
		t.Fatalf("kind %q is not TFJob or PyTorchJob", kind)
	}
	inst, err := jsonValue(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("the %s does not match the operator's CRD schema:\n%v", kind, err)
	}
	for _, e := range webhookErrors(kind, doc) {
		t.Errorf("the operator's admission webhook would refuse it: %s", e)
	}
}

// webhookErrors applies the rules of the training operator's validating
// webhooks (v1.9.0, pkg/webhooks/tensorflow/tfjob_webhook.go and
// pkg/webhooks/pytorch/pytorchjob_webhook.go) and of the API server on
// what the schema leaves open.
func webhookErrors(kind string, doc map[string]any) []string {
	var errs []string
	meta, _ := doc["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); !dns1035Label(name) {
		errs = append(errs, fmt.Sprintf("metadata.name %q is not a DNS-1035 label", name))
	}
	spec, _ := doc["spec"].(map[string]any)
	// The operator's own values (pkg/apis/kubeflow.org/v1/common_types.go),
	// which the schema leaves as plain strings.
	rp, _ := spec["runPolicy"].(map[string]any)
	if p, ok := rp["cleanPodPolicy"]; ok && !contains([]string{"All", "Running", "None"}, fmt.Sprint(p)) {
		errs = append(errs, fmt.Sprintf("cleanPodPolicy %v", p))
	}
	key, container, types := "tfReplicaSpecs", "tensorflow", []string{"PS", "Chief", "Master", "Worker", "Evaluator"}
	if kind == "PyTorchJob" {
		key, container, types = "pytorchReplicaSpecs", "pytorch", []string{"Master", "Worker"}
	}
	specs, _ := spec[key].(map[string]any)
	if len(specs) == 0 {
		errs = append(errs, key+" must be given")
	}
	chiefs := 0
	envName := regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
	for rt, v := range specs {
		if !contains(types, rt) {
			errs = append(errs, fmt.Sprintf("replica type %s is not one of %s", rt, strings.Join(types, ", ")))
		}
		if rt == "Chief" || rt == "Master" {
			chiefs++
		}
		rs, _ := v.(map[string]any)
		if p := fmt.Sprint(rs["restartPolicy"]); !contains([]string{"Always", "OnFailure", "Never", "ExitCode"}, p) {
			errs = append(errs, fmt.Sprintf("%s: restartPolicy %s", rt, p))
		}
		n, _ := rs["replicas"].(int)
		if rt == "Master" && n != 1 || n < 1 {
			errs = append(errs, fmt.Sprintf("%s: %d replicas", rt, n))
		}
		pod, _ := rs["template"].(map[string]any)["spec"].(map[string]any)
		cs, _ := pod["containers"].([]any)
		named := false
		for _, c := range cs {
			c, _ := c.(map[string]any)
			named = named || c["name"] == container
			if img, _ := c["image"].(string); img == "" {
				errs = append(errs, rt+": a container has no image")
			}
			seen := map[string]bool{}
			for _, e := range asList(c["env"]) {
				name, _ := e.(map[string]any)["name"].(string)
				if !envName.MatchString(name) || seen[name] {
					errs = append(errs, fmt.Sprintf("%s: env %q is not a valid, unique name", rt, name))
				}
				seen[name] = true
			}
		}
		if !named {
			errs = append(errs, rt+": no container named "+container)
		}
	}
	if chiefs > 1 {
		errs = append(errs, "more than one Chief or Master")
	}
	return errs
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSchemaCatchesMistakes: the checks above would see a misspelt field,
// a wrong type and a broken webhook rule.
func TestSchemaCatchesMistakes(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, goldenCases[4].opts); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	for _, c := range []struct{ from, to, want string }{
		{"replicas: 4", "replicaz: 4", "replicaz"},
		{"containerPort: 2222", "containerPort: \"2222\"", "containerPort"},
		{"cleanPodPolicy: Running", "cleanPodPolicy: Running\n    backoffLimit: many", "backoffLimit"},
	} {
		bad := strings.Replace(good, c.from, c.to, 1)
		if bad == good {
			t.Fatalf("%q is not in the manifest", c.from)
		}
		var doc map[string]any
		yaml.Unmarshal([]byte(bad), &doc)
		sch, err := crdSchema("TFJob")
		if err != nil {
			t.Fatal(err)
		}
		inst, _ := jsonValue(doc)
		if err := sch.Validate(inst); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s → %s: validation said %v", c.from, c.to, err)
		}
	}
	for _, c := range []struct{ from, to string }{
		{"name: tensorflow", "name: tf"},
		{"restartPolicy: Never", "restartPolicy: Sometimes"},
		{"cleanPodPolicy: Running", "cleanPodPolicy: Sometimes"},
		{"name: r1", "name: R1"},
	} {
		var doc map[string]any
		yaml.Unmarshal([]byte(strings.Replace(good, c.from, c.to, -1)), &doc)
		if errs := webhookErrors("TFJob", doc); len(errs) == 0 {
			t.Errorf("%s → %s passed the webhook rules", c.from, c.to)
		}
	}
}
