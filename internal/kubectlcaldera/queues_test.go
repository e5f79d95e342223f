package kubectlcaldera

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

func queue(name, parent string, weight int32) qapi.Queue {
	return qapi.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: qapi.QueueSpec{Parent: parent, Weight: weight}}
}

func TestQueueRowsTree(t *testing.T) {
	qs := []qapi.Queue{
		queue("team-b", "org", 1), queue("org", "", 2), queue("team-a", "org", 3),
		queue("default", "", 1), queue("lost", "gone", 1),
		queue("x", "y", 1), queue("y", "x", 1), // a parent cycle
		queue("self", "self", 1),
	}
	var got []string
	for _, r := range QueueRows(qs) {
		got = append(got, strings.Repeat(".", r.Depth)+r.Name+map[bool]string{true: "!"}[r.ParentMissing])
	}
	want := []string{"default", "lost!", "org", ".team-a", ".team-b", "self!", "x!", ".y"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("tree = %v, want %v", got, want)
	}
}

func TestPrintQueues(t *testing.T) {
	q := queue("team-a", "", 2)
	q.Spec.Capability = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	q.Status = qapi.QueueStatus{
		Deserved:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")},
		Allocated: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")},
		Share:     "0.50", Pending: 2, Admitted: 1, Running: 4,
	}
	rows := QueueRows([]qapi.Queue{q, queue("team-b", "", 1)})

	var table bytes.Buffer
	if err := printQueues(&table, rows, "table"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("table:\n%s", table.String())
	}
	if f := strings.Fields(lines[1]); strings.Join(f, " ") != "team-a 2 Open - cpu=8,memory=16Gi cpu=6 cpu=3 0.50 2 1 4" {
		t.Errorf("team-a row = %q", lines[1])
	}
	if f := strings.Fields(lines[2]); strings.Join(f, " ") != "team-b 1 Open - - - - - 0 0 0" {
		t.Errorf("team-b row = %q", lines[2])
	}

	var js bytes.Buffer
	if err := printQueues(&js, rows, "json"); err != nil {
		t.Fatal(err)
	}
	var back []QueueRow
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back) != 2 || back[0].Deserved["cpu"] != "6" || back[0].Running != 4 {
		t.Errorf("json = %s (%v)", js.String(), err)
	}
	var ym bytes.Buffer
	if err := printQueues(&ym, rows, "yaml"); err != nil || !strings.Contains(ym.String(), "name: team-a") {
		t.Errorf("yaml = %s (%v)", ym.String(), err)
	}
}

func TestUnknownOutputRefused(t *testing.T) {
	cmd := NewCommand(&bytes.Buffer{})
	cmd.SetArgs([]string{"queues", "-o", "xml", "--kubeconfig", "/nonexistent"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), `unknown output format "xml"`) {
		t.Errorf("Execute = %v", err)
	}
}
