package kubectlcaldera

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func pg(ns, name string, min int32, labels, annotations map[string]string, phase v1alpha1.PodGroupPhase) v1alpha1.PodGroup {
	return v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: labels,
			Annotations: annotations, CreationTimestamp: metav1.NewTime(t0)},
		Spec:   v1alpha1.PodGroupSpec{MinMember: min},
		Status: v1alpha1.PodGroupStatus{Phase: phase},
	}
}

func pod(ns, name, group, node, sched string, phase corev1.PodPhase, labels map[string]string) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), Labels: map[string]string{},
			CreationTimestamp: metav1.NewTime(t0)},
		Spec:   corev1.PodSpec{NodeName: node, SchedulerName: sched},
		Status: corev1.PodStatus{Phase: phase},
	}
	for k, v := range labels {
		p.Labels[k] = v
	}
	if group != "" {
		p.Labels[v1alpha1.PodGroupLabel] = group
	}
	return p
}

func event(uid, reason, note string, at time.Time) eventsv1.Event {
	return eventsv1.Event{Regarding: corev1.ObjectReference{UID: types.UID(uid)}, Reason: reason, Note: note, EventTime: metav1.NewMicroTime(at)}
}

func TestJobRows(t *testing.T) {
	const sched = "caldera-scheduler"
	pgs := []v1alpha1.PodGroup{
		pg("ml", "train", 2, map[string]string{qapi.QueueLabel: "team-a"}, map[string]string{qapi.AdmittedAtAnnotation: "2026-12-02T12:00:05Z"}, v1alpha1.PodGroupRunning),
		pg("ml", "big", 4, nil, map[string]string{qapi.ExpectedStartAnnotation: "2026-12-02T12:05:30Z"}, ""),
		// Waiting behind jobs without a run-time limit: an estimate only.
		pg("ml", "est", 2, nil, map[string]string{qapi.EstimatedStartAnnotation: "2026-12-02T12:05:30Z"}, ""),
	}
	pods := []corev1.Pod{
		pod("ml", "train-0", "train", "n1", sched, corev1.PodRunning, nil),
		pod("ml", "train-1", "train", "n2", sched, corev1.PodRunning, nil),
		pod("ml", "train-2", "train", "", sched, corev1.PodPending, nil),
		// big's queue comes from a member, before the namespace's.
		pod("ml", "big-0", "big", "", sched, corev1.PodPending, map[string]string{qapi.QueueLabel: "team-b"}),
		pod("ml", "big-1", "big", "", sched, corev1.PodPending, nil),
		// A singleton of ours, one of another scheduler, one finished.
		pod("ml", "solo", "", "", sched, corev1.PodPending, nil),
		pod("ml", "web", "", "n1", corev1.DefaultSchedulerName, corev1.PodRunning, nil),
		pod("ml", "done", "", "n1", sched, corev1.PodSucceeded, nil),
	}
	events := []eventsv1.Event{
		event("ml/big", "NotAdmitted", "queue team-b: cpu request 4 exceeds remaining capability 2", t0.Add(2*time.Second)),
		event("ml/big", "NotAdmitted", "waiting for members: 2/4", t0.Add(time.Second)),
		event("ml/solo", "NotAdmitted", "queue ns-q: cpu request 1 exceeds remaining deserved share 0", t0),
	}
	rows := JobRows(pgs, pods, events, map[string]string{"ml": "ns-q"}, []string{sched}, "default", t0.Add(90*time.Second))
	want := []JobRow{
		{Namespace: "ml", Name: "big", Kind: "PodGroup", Queue: "team-b", Phase: "Pending", MinMember: 4, Members: 2, Waiting: "90s",
			ExpectedStart: "2026-12-02T12:05:30Z", ETA: "in 4m",
			Verdict: "NotAdmitted: queue team-b: cpu request 4 exceeds remaining capability 2"},
		{Namespace: "ml", Name: "est", Kind: "PodGroup", Queue: "ns-q", Phase: "Pending", MinMember: 2, Waiting: "90s",
			EstimatedStart: "2026-12-02T12:05:30Z", ETA: "~in 4m"},
		{Namespace: "ml", Name: "solo", Kind: "Pod", Queue: "ns-q", Phase: "Pending", MinMember: 1, Members: 1, Waiting: "90s",
			Verdict: "NotAdmitted: queue ns-q: cpu request 1 exceeds remaining deserved share 0"},
		{Namespace: "ml", Name: "train", Kind: "PodGroup", Queue: "team-a", Phase: "Running", MinMember: 2, Members: 3, Bound: 2,
			AdmittedAt: "2026-12-02T12:00:05Z"},
	}
	got, _ := json.Marshal(rows)
	w, _ := json.Marshal(want)
	if string(got) != string(w) {
		t.Errorf("rows\n%s\nwant\n%s", got, w)
	}

	var out bytes.Buffer
	if err := printJobs(&out, rows, "table"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.Contains(lines[1], "0/4") || !strings.Contains(lines[1], "in 4m") ||
		!strings.Contains(lines[2], "~in 4m") || !strings.Contains(lines[4], "2026-12-02T12:00:05Z") {
		t.Errorf("table:\n%s", out.String())
	}
	out.Reset()
	if err := printJobs(&out, nil, "json"); err != nil || strings.TrimSpace(out.String()) != "[]" {
		t.Errorf("no rows as JSON: %q %v, want []", out.String(), err)
	}
}

// The verdict the scheduler keeps on the objects wins over Events, which
// expire and fold repeats: a PodGroup's verdict annotation, else a waiting
// member's PodScheduled=False condition; a singleton's condition.
func TestJobRowsPreferKeptVerdicts(t *testing.T) {
	const sched = "caldera-scheduler"
	held := func(p corev1.Pod, reason, msg string) corev1.Pod {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg}}
		return p
	}
	pgs := []v1alpha1.PodGroup{
		pg("ml", "refused", 2, nil, map[string]string{qapi.VerdictAnnotation: "queue q: cpu request 2 exceeds remaining capability 0"}, ""),
		pg("ml", "short", 3, nil, nil, ""),
	}
	pods := []corev1.Pod{
		held(pod("ml", "refused-0", "refused", "", sched, corev1.PodPending, nil), "WaitingForAdmission", "older numbers"),
		held(pod("ml", "short-0", "short", "", sched, corev1.PodPending, nil), "WaitingForMembers", "waiting for PodGroup ml/short to have minMember 3 members"),
		held(pod("ml", "solo", "", "", sched, corev1.PodPending, nil), "WaitingForAdmission", "queue q: cpu request 1 exceeds remaining deserved share 0"),
	}
	events := []eventsv1.Event{
		event("ml/refused", "NotAdmitted", "an old Event", t0),
		event("ml/short", "Waiting", "waiting for members: 1/3", t0),
		event("ml/solo", "NotAdmitted", "an old Event", t0),
	}
	got := map[string]string{}
	for _, r := range JobRows(pgs, pods, events, nil, []string{sched}, "q", t0) {
		got[r.Name] = r.Verdict
	}
	want := map[string]string{
		"refused": "NotAdmitted: queue q: cpu request 2 exceeds remaining capability 0",
		"short":   "WaitingForMembers: waiting for PodGroup ml/short to have minMember 3 members",
		"solo":    "WaitingForAdmission: queue q: cpu request 1 exceeds remaining deserved share 0",
	}
	if !maps.Equal(got, want) {
		t.Errorf("verdicts\n got %v\nwant %v", got, want)
	}
}

// TestSetPositions: a row's position is its index in its queue's published
// head plus one, matched by kind, namespace and name; others have none.
func TestSetPositions(t *testing.T) {
	rows := []JobRow{
		{Namespace: "ml", Name: "train", Kind: "PodGroup"},
		{Namespace: "ml", Name: "solo", Kind: "Pod"},
		{Namespace: "ml", Name: "train", Kind: "Pod"}, // same name, other kind
		{Namespace: "other", Name: "solo", Kind: "Pod"},
		{Namespace: "ml", Name: "running", Kind: "PodGroup"},
	}
	queues := []qapi.Queue{
		{Status: qapi.QueueStatus{Head: []qapi.QueuedGroup{{Kind: "Pod", Namespace: "ml", Name: "solo"}, {Kind: "PodGroup", Namespace: "ml", Name: "train"}}}},
		{Status: qapi.QueueStatus{Head: []qapi.QueuedGroup{{Kind: "Pod", Namespace: "other", Name: "solo"}}}},
	}
	SetPositions(rows, queues)
	got := []int{}
	for _, r := range rows {
		got = append(got, r.Position)
	}
	if want := []int{2, 1, 0, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("positions %v, want %v", got, want)
	}
	var b bytes.Buffer
	if err := printJobs(&b, rows, "table"); err != nil || !strings.Contains(b.String(), "POSITION") {
		t.Errorf("table (%v):\n%s", err, b.String())
	}
}

// Pods in a gang by annotation count under the PodGroup Caldera created for
// their controller, not as singletons.
func TestJobRowsGangByAnnotation(t *testing.T) {
	const sched = "caldera-scheduler"
	yes := true
	pgs := []v1alpha1.PodGroup{pg("ml", "job-train", 2, nil, nil, v1alpha1.PodGroupPending)}
	var pods []corev1.Pod
	for _, n := range []string{"train-0", "train-1"} {
		p := pod("ml", n, "", "", sched, corev1.PodPending, nil)
		p.Annotations = map[string]string{qapi.GangMinMemberAnnotation: "2"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "u", Controller: &yes}}
		pods = append(pods, p)
	}
	rows := JobRows(pgs, pods, nil, nil, []string{sched}, "default", t0)
	if len(rows) != 1 || rows[0].Name != "job-train" || rows[0].Kind != "PodGroup" || rows[0].Members != 2 {
		t.Errorf("rows %+v, want one PodGroup job-train with 2 members", rows)
	}
}
