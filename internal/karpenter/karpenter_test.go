package karpenter

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The instance types file has the fields the provider's own
// instance_types.json has, one offering per type in Zone.
func TestInstanceTypesJSON(t *testing.T) {
	data, err := InstanceTypesJSON(DefaultInstanceTypes())
	if err != nil {
		t.Fatal(err)
	}
	var got []struct {
		Name      string            `json:"name"`
		Resources map[string]string `json:"resources"`
		Offerings []struct {
			Price        float64
			Requirements []struct{ Key string }
		} `json:"offerings"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[3].Name != "c-16x-amd64-linux" || got[3].Resources["cpu"] != "16" || got[3].Resources["memory"] != "64Gi" {
		t.Fatalf("unexpected instance types: %s", data)
	}
	if len(got[0].Offerings) != 1 || !strings.Contains(string(data), Zone) {
		t.Fatalf("want one offering in %s: %s", Zone, data)
	}
}

// A completed NodePool refers to its NodeClass and carries the limit and
// consolidation the options ask for, in Karpenter's duration format.
func TestNodePool(t *testing.T) {
	o := NodePoolOptions{InstanceTypes: []string{"c-8x-amd64-linux"}, ConsolidateAfter: 1500 * time.Millisecond}
	o.Complete()
	np := NodePool(o)
	for path, want := range map[string]string{
		"metadata.name":                         "default",
		"spec.limits.cpu":                       "64",
		"spec.disruption.consolidateAfter":      "2s",
		"spec.disruption.consolidationPolicy":   "WhenEmptyOrUnderutilized",
		"spec.template.spec.nodeClassRef.name":  "default",
		"spec.template.spec.nodeClassRef.kind":  "KWOKNodeClass",
		"spec.template.spec.nodeClassRef.group": KWOKNodeClasses.Group,
		"spec.template.spec.expireAfter":        "Never",
	} {
		got, _, _ := unstructured.NestedString(np.Object, strings.Split(path, ".")...)
		if got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	reqs, _, _ := unstructured.NestedSlice(np.Object, "spec", "template", "spec", "requirements")
	if len(reqs) != 4 {
		t.Errorf("want arch, os, capacity type and instance type requirements, got %v", reqs)
	}
	if nc := NodeClass(NodePoolOptions{Name: "x", RegistrationDelay: 3 * time.Second}); nc.Object["spec"].(map[string]any)["nodeRegistrationDelay"] != "3s" {
		t.Errorf("NodeClass spec %v, want nodeRegistrationDelay 3s", nc.Object["spec"])
	}
}

// Missing binaries are reported with the command that builds them.
func TestCheckKarpenterNamesMake(t *testing.T) {
	a := ArtifactsIn(t.TempDir())
	err := a.CheckKarpenter()
	if err == nil || !strings.Contains(err.Error(), "make karpenter") || !strings.Contains(err.Error(), filepath.Base(a.Karpenter)) {
		t.Fatalf("CheckKarpenter() = %v, want an error naming %s and `make karpenter`", err, a.Karpenter)
	}
}
