// Command chartconfig checks that the KubeSchedulerConfiguration the Helm
// chart renders is the shipped one. It reads `helm template` output on
// stdin, takes config.yaml from the rendered ConfigMap and compares it with
// the file named on the command line, as data: key order, comments, quoting
// and indentation do not matter, values and list order do. `make
// chart-check` runs it on the chart's defaults, on its
// profiles.defaultScheduler rendering, and on the sole-scheduler kustomize
// overlay (any stream with one such ConfigMap).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: helm template ... | chartconfig manifests/scheduler/config.yaml")
		os.Exit(2)
	}
	want, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	got, err := renderedConfig(os.Stdin)
	if err != nil {
		fail(err)
	}
	diffs, err := compare(got, want)
	if err != nil {
		fail(err)
	}
	if len(diffs) > 0 {
		fmt.Fprintf(os.Stderr, "chart-check: the rendered KubeSchedulerConfiguration differs from %s at:\n", os.Args[1])
		for _, d := range diffs {
			fmt.Fprintln(os.Stderr, "  "+d)
		}
		fmt.Fprintln(os.Stderr, "keep charts/caldera/values.yaml and templates/configmap.yaml (or the kustomize component) in sync with it")
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chart-check:", err)
	os.Exit(1)
}

// renderedConfig returns data["config.yaml"] of the one ConfigMap in a
// stream of YAML documents that has it.
func renderedConfig(r io.Reader) ([]byte, error) {
	docs := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var found []byte
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the rendered chart: %w", err)
		}
		var obj struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("decoding a rendered object: %w", err)
		}
		if config, ok := obj.Data["config.yaml"]; ok && obj.Kind == "ConfigMap" {
			if found != nil {
				return nil, errors.New("the chart renders more than one ConfigMap with config.yaml")
			}
			found = []byte(config)
		}
	}
	if found == nil {
		return nil, errors.New("the chart renders no ConfigMap with config.yaml")
	}
	return found, nil
}

// compare decodes two YAML documents and returns where they differ, one
// line per path (profiles[0].pluginConfig[1].args.defaultQueue), sorted.
func compare(got, want []byte) ([]string, error) {
	var g, w any
	if err := yaml.Unmarshal(got, &g); err != nil {
		return nil, fmt.Errorf("decoding the chart's config.yaml: %w", err)
	}
	if err := yaml.Unmarshal(want, &w); err != nil {
		return nil, fmt.Errorf("decoding the shipped configuration: %w", err)
	}
	var diffs []string
	diff("", g, w, &diffs)
	sort.Strings(diffs)
	return diffs, nil
}

func diff(path string, got, want any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				*out = append(*out, fmt.Sprintf("%s: missing from the chart (shipped: %s)", join(path, k), show(wv)))
				continue
			}
			diff(join(path, k), gv, wv, out)
		}
		for k, gv := range g {
			if _, ok := w[k]; !ok {
				*out = append(*out, fmt.Sprintf("%s: only in the chart (%s)", join(path, k), show(gv)))
			}
		}
		return
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			break
		}
		for i := range w {
			diff(fmt.Sprintf("%s[%d]", path, i), g[i], w[i], out)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		*out = append(*out, fmt.Sprintf("%s: chart %s, shipped %s", orRoot(path), show(got), show(want)))
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(document)"
	}
	return path
}

// show renders a value on one line, as JSON.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
