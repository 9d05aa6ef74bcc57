//go:build ignore

// Strip copies a CustomResourceDefinition from stdin to stdout without
// its "description" texts, which are four fifths of Kubeflow's CRDs and
// mean nothing to validation. A property that happens to be named
// "description" is kept: its value is a schema, not a string.
//
//	go run strip.go < kubeflow.org_tfjobs.yaml > kubeflow.org_tfjobs.yaml
package main

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

func main() {
	var doc yaml.Node
	if err := yaml.NewDecoder(os.Stdin).Decode(&doc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	strip(&doc)
	enc := yaml.NewEncoder(os.Stdout)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func strip(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		kept := n.Content[:0]
		for i := 0; i < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "description" && v.Kind == yaml.ScalarNode {
				continue
			}
			kept = append(kept, k, v)
		}
		n.Content = kept
	}
	for _, c := range n.Content {
		strip(c)
	}
}
