package sole_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/caldera-sched/caldera/internal/localcluster"
)

// shippedDefaultProfile is the one profile the sole-scheduler configuration
// adds: upstream's defaults with the queue sort all profiles must share.
const shippedDefaultProfile = `
schedulerName: default-scheduler
plugins:
  queueSort:
    enabled:
      - name: CalderaQueueSort
    disabled:
      - name: PrioritySort
`

// TestShippedConfigsAgree: the sole-scheduler configuration is
// manifests/scheduler/config.yaml with the Lease kube-scheduler and the
// default profile last, and nothing else (compared as data, so comments
// and layout may differ); each shipped file decodes strictly, as
// kube-scheduler reads it.
func TestShippedConfigsAgree(t *testing.T) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	shipped := filepath.Join(root, "manifests", "scheduler", "config.yaml")
	sole := filepath.Join(root, "manifests", "components", "sole-scheduler", "config.yaml")
	for _, f := range []string{shipped, sole} {
		if _, err := localcluster.ReadSchedulerConfig(f); err != nil {
			t.Errorf("%s does not decode strictly: %v", f, err)
		}
	}

	base, soleCfg := readMap(t, shipped), readMap(t, sole)
	le := soleCfg["leaderElection"].(map[string]any)
	if le["resourceName"] != "kube-scheduler" || le["resourceNamespace"] != "kube-system" {
		t.Errorf("the sole configuration's Lease is %v/%v, want kube-system/kube-scheduler", le["resourceNamespace"], le["resourceName"])
	}
	le["resourceName"] = base["leaderElection"].(map[string]any)["resourceName"]
	profiles := soleCfg["profiles"].([]any)
	var def map[string]any
	if err := yaml.Unmarshal([]byte(shippedDefaultProfile), &def); err != nil {
		t.Fatal(err)
	}
	if last := profiles[len(profiles)-1]; !reflect.DeepEqual(last, def) {
		t.Errorf("the sole configuration's last profile is\n%v\nwant\n%v", last, def)
	}
	soleCfg["profiles"] = profiles[:len(profiles)-1]
	if !reflect.DeepEqual(soleCfg, base) {
		a, _ := yaml.Marshal(soleCfg)
		b, _ := yaml.Marshal(base)
		t.Errorf("%s, without its Lease name and default profile, differs from %s:\n%s\nwant\n%s", sole, shipped, a, b)
	}
}

// readMap decodes a YAML file as data.
func readMap(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return m
}
