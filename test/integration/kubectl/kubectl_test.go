// Package kubectl_test runs kubectl-caldera against a real kube-apiserver
// whose Queue status the real scheduler writes.
package kubectl_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/internal/kubectlcaldera"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const timeout = 30 * time.Second

func run(t *testing.T, env *harness.Env, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := kubectlcaldera.NewCommand(&out)
	cmd.SetArgs(append(args, "--kubeconfig", env.Kubeconfig))
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// TestKubectl: one control plane for the commands, each a subtest.
func TestKubectl(t *testing.T) {
	env := harness.Start(t)
	t.Run("queues", func(t *testing.T) { testQueues(t, env) })
	t.Run("jobs", func(t *testing.T) { testJobs(t, env) })
}

func testQueues(t *testing.T, env *harness.Env) {
	env.AddNodes(t, 2, "4", "8Gi")
	env.CreateQueue(t, "org", qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("6")}})
	env.CreateQueue(t, "team-a", qapi.QueueSpec{Weight: 2, Parent: "org"})
	env.StartScheduler(t)
	ns := env.Namespace(t)
	pg := harness.PodGroup(ns, "train", 3)
	pg.Labels = map[string]string{qapi.QueueLabel: "team-a"}
	env.CreatePodGroup(t, pg)
	env.CreatePods(t, harness.Members(ns, "train", 3, "1")...)
	env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=train", 3, timeout)

	// What the command shows is what the scheduler wrote: wait for the
	// status, then compare the command's rows with the API's.
	var want qapi.QueueStatus
	harness.WaitFor(t, timeout, func() (bool, error) {
		q, err := env.QueueClient().SchedulingV1alpha1().Queues().Get(t.Context(), "team-a", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want = q.Status
		cpu := q.Status.Allocated[v1.ResourceCPU]
		return cpu.Cmp(resource.MustParse("3")) == 0, nil
	}, "queue team-a status: 3 cpu allocated")

	out, err := run(t, env, "queues", "-o", "json")
	if err != nil {
		t.Fatalf("queues -o json: %v", err)
	}
	var rows []kubectlcaldera.QueueRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("queues -o json is not JSON: %v\n%s", err, out)
	}
	byName := map[string]kubectlcaldera.QueueRow{}
	var order []string
	for _, r := range rows {
		byName[r.Name] = r
		order = append(order, r.Name)
	}
	if strings.Join(order, " ") != "default org team-a" {
		t.Errorf("queues in order %v, want default, org, then its child team-a", order)
	}
	a := byName["team-a"]
	if a.Depth != 1 || a.Parent != "org" || a.Weight != 2 || a.Running != want.Running || a.Admitted != want.Admitted || a.Share != want.Share || a.Share == "" {
		t.Errorf("team-a row %+v, status %+v", a, want)
	}
	if got, w := a.Allocated["cpu"], want.Allocated.Cpu().String(); got != w {
		t.Errorf("team-a allocated cpu %q, status says %q", got, w)
	}
	if byName["org"].Capability["cpu"] != "6" {
		t.Errorf("org capability %v, want cpu 6", byName["org"].Capability)
	}

	table, err := run(t, env, "queues")
	if err != nil {
		t.Fatalf("queues: %v", err)
	}
	if !strings.Contains(table, "\n  team-a ") || !strings.Contains(table, "cpu=6") {
		t.Errorf("table does not show team-a under org with org's capability:\n%s", table)
	}

	if _, err := run(t, env, "queues", "--context", "no-such-context"); err == nil || !strings.Contains(err.Error(), "no-such-context") {
		t.Errorf("an unknown context: error %v, want one naming it", err)
	}
}

// testJobs: a gang the scheduler admitted and placed, and one refused for
// its queue's capability, as the jobs command shows them.
func testJobs(t *testing.T, env *harness.Env) {
	env.AddNodes(t, 1, "4", "8Gi")
	env.CreateQueue(t, "tiny", qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}})
	env.StartScheduler(t)
	ns := env.Namespace(t)
	ok := harness.PodGroup(ns, "ok", 2)
	ok.Labels = map[string]string{qapi.QueueLabel: "tiny"}
	env.CreatePodGroup(t, ok)
	env.CreatePods(t, harness.Members(ns, "ok", 2, "500m")...)
	env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=ok", 2, timeout)
	big := harness.PodGroup(ns, "big", 2)
	big.Labels = map[string]string{qapi.QueueLabel: "tiny"}
	env.CreatePodGroup(t, big)
	env.CreatePods(t, harness.Members(ns, "big", 2, "1")...)

	// The verdict is an Event the scheduler writes asynchronously.
	var rows []kubectlcaldera.JobRow
	harness.WaitFor(t, timeout, func() (bool, error) {
		out, err := run(t, env, "jobs", "-n", ns, "-o", "json")
		if err != nil {
			return false, err
		}
		rows = nil
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			return false, fmt.Errorf("jobs -o json is not JSON: %w\n%s", err, out)
		}
		return len(rows) == 2 && rows[0].Verdict != "" && rows[1].AdmittedAt != "", nil
	}, "jobs to show big's verdict and ok's admission")
	b, o := rows[0], rows[1]
	if b.Name != "big" || b.Queue != "tiny" || b.Bound != 0 || b.Members != 2 || b.AdmittedAt != "" ||
		!strings.Contains(b.Verdict, "queue tiny: cpu request") || b.Waiting == "" {
		t.Errorf("big: %+v, want it waiting in tiny, not admitted, for its capability", b)
	}
	if o.Name != "ok" || o.Bound != 2 || o.MinMember != 2 || o.Waiting != "" {
		t.Errorf("ok: %+v, want 2/2 bound, admitted, not waiting", o)
	}
	if out, err := run(t, env, "jobs", "-A", "-q", "no-such-queue", "-o", "json"); err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("jobs -q no-such-queue: %q %v, want []", out, err)
	}
	table, err := run(t, env, "jobs", "-n", ns)
	if err != nil || !strings.Contains(table, "NotAdmitted: queue tiny") {
		t.Errorf("jobs table (%v):\n%s", err, table)
	}
	testExplain(t, env, ns)
	testPositions(t, env, ns)
}

// testPositions: two gangs that fit tiny's capability once ok leaves wait
// in order (created one after the other, same priority), and jobs and
// explain show their positions from tiny's status.
func testPositions(t *testing.T, env *harness.Env, ns string) {
	// Created in this order within one second or across two: either way
	// "first" goes first (creation time, then name).
	for _, name := range []string{"first", "second"} {
		g := harness.PodGroup(ns, name, 2)
		g.Labels = map[string]string{qapi.QueueLabel: "tiny"}
		env.CreatePodGroup(t, g)
		env.CreatePods(t, harness.Members(ns, name, 2, "500m")...)
	}
	pos := map[string]int{}
	harness.WaitFor(t, timeout, func() (bool, error) {
		out, err := run(t, env, "jobs", "-n", ns, "-q", "tiny", "-o", "json")
		if err != nil {
			return false, err
		}
		var rows []kubectlcaldera.JobRow
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			return false, err
		}
		for _, r := range rows {
			pos[r.Name] = r.Position
		}
		return pos["first"] > 0 && pos["second"] == pos["first"]+1, nil
	}, "jobs to show first and then second in tiny's order")
	if pos["ok"] != 0 {
		t.Errorf("positions %v: ok was admitted, it has no position", pos)
	}
	out, err := run(t, env, "explain", "second", "-n", ns)
	if err != nil || !strings.Contains(out, fmt.Sprintf("%d in queue tiny", pos["second"])) {
		t.Errorf("explain second (%v):\n%s", err, out)
	}
}

// testExplain: explain on the jobs above. big waits for admission: its
// verdict, what it needs and tiny's capability check with the numbers the
// scheduler wrote in tiny's status; a member explains as its gang; ok runs.
func testExplain(t *testing.T, env *harness.Env, ns string) {
	var e kubectlcaldera.Explanation
	harness.WaitFor(t, timeout, func() (bool, error) {
		out, err := run(t, env, "explain", "podgroup/big", "-n", ns, "-o", "json")
		if err != nil {
			return false, err
		}
		e = kubectlcaldera.Explanation{}
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			return false, fmt.Errorf("explain -o json is not JSON: %w\n%s", err, out)
		}
		// tiny's status says ok's 1 cpu is allocated once the writer ran.
		return len(e.Checks) > 0 && e.Checks[0].Allocated == "1", nil
	}, "explain to show tiny's status with ok's cpu allocated")
	if e.Kind != "PodGroup" || e.Name != "big" || e.Queue != "tiny" || e.Stage != "WaitingForAdmission" ||
		!strings.Contains(e.Verdict, "queue tiny: cpu request 2 exceeds") || e.Needs["cpu"] != "2" {
		t.Errorf("explain big: %+v", e)
	}
	if c := e.Checks[0]; c.Queue != "tiny" || c.Check != "capability" || c.Limit != "1" || c.Needs != "2" || c.OK || !c.Never {
		t.Errorf("explain big: first check %+v, want tiny's capability 1 failing for good for 2 cpu", c)
	}
	if !strings.Contains(strings.Join(e.Changes, "\n"), "more cpu than queue tiny's capability (limit 1, needs 2): it can never start") {
		t.Errorf("explain big: changes %q do not name tiny's capability", e.Changes)
	}
	member, err := run(t, env, "explain", "big-0", "-n", ns)
	if err != nil || !strings.Contains(member, "PodGroup "+ns+"/big") || !strings.Contains(member, "stage WaitingForAdmission") {
		t.Errorf("explain big-0 (a member, by bare name) (%v):\n%s", err, member)
	}
	running, err := run(t, env, "explain", "pod/ok-1", "-n", ns)
	if err != nil || !strings.Contains(running, "stage Running") {
		t.Errorf("explain pod/ok-1 (%v):\n%s", err, running)
	}
	if _, err := run(t, env, "explain", "pod/no-such-pod", "-n", ns); err == nil || !strings.Contains(err.Error(), "no-such-pod") {
		t.Errorf("explain of a missing pod: error %v, want one naming it", err)
	}
	if _, err := run(t, env, "explain", "deployment/x", "-n", ns); err == nil {
		t.Errorf("explain deployment/x: no error")
	}
}
