package kubectlcaldera

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

func withCPU(p corev1.Pod, cpu string) corev1.Pod {
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	return p
}

func held(p corev1.Pod, reason, msg string) corev1.Pod {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg}}
	return p
}

func cpuList(v string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
}

// TestExplain: the stage, what the job needs, the queue checks along its
// path and the advice, for each stage a job can wait at.
func TestExplain(t *testing.T) {
	const sched = "caldera-scheduler"
	queues := []qapi.Queue{
		{Spec: qapi.QueueSpec{Capability: cpuList("10")}, Status: qapi.QueueStatus{Allocated: cpuList("8"), Deserved: cpuList("12")}},
		{Spec: qapi.QueueSpec{Parent: "org"}, Status: qapi.QueueStatus{Allocated: cpuList("6"), Deserved: cpuList("7")}},
	}
	queues[0].Name, queues[1].Name = "org", "team-a"
	team := map[string]string{qapi.QueueLabel: "team-a"}
	verdict := map[string]string{qapi.VerdictAnnotation: "queue org: cpu request 3 exceeds remaining capability 2"}
	members := func(group string, n int, bound int, cond string) []corev1.Pod {
		var out []corev1.Pod
		for i := range n {
			node := ""
			if i < bound {
				node = "n1"
			}
			p := withCPU(pod("ml", group+"-"+string(rune('a'+i)), group, node, sched, corev1.PodPending, nil), "1")
			if node == "" && cond != "" {
				reason, msg, _ := strings.Cut(cond, ": ")
				p = held(p, reason, msg)
			}
			out = append(out, p)
		}
		return out
	}
	tests := []struct {
		name       string
		in         ExplainInput
		stage      string
		needs      string
		failing    []string // queue/check of the checks that fail
		passing    int
		changeHas  string
		verdictHas string
		startsHas  string // in the table's starts line
	}{{
		name: "gang refused by an ancestor's capability",
		in: ExplainInput{PodGroup: ptr(pg("ml", "train", 3, team, verdict, "")), Pods: members("train", 4, 0, "WaitingForAdmission: "+verdict[qapi.VerdictAnnotation]),
			Queues: queues, DefaultQueue: "default"},
		stage: "WaitingForAdmission", needs: "cpu=3", failing: []string{"team-a/deserved", "org/capability"}, passing: 1,
		changeHas: "queue org is at its capability on cpu (limit 10, allocated 8, needs 3)", verdictHas: "remaining capability 2",
	}, {
		name: "gang larger than its queue's capability",
		in: ExplainInput{PodGroup: ptr(pg("ml", "huge", 11, map[string]string{qapi.QueueLabel: "org"}, verdict, "")), Pods: members("huge", 11, 0, ""),
			Queues: queues, DefaultQueue: "default"},
		stage: "WaitingForAdmission", needs: "cpu=11", failing: []string{"org/capability", "org/deserved"},
		changeHas: "it can never start there", verdictHas: "queue org",
	}, {
		name: "gang short of members",
		in: ExplainInput{PodGroup: ptr(pg("ml", "train", 3, team, nil, "")), Pods: members("train", 2, 0, "WaitingForMembers: waiting for PodGroup ml/train to have minMember 3 members"),
			Queues: queues, DefaultQueue: "default"},
		stage: "WaitingForMembers", needs: "cpu=2", failing: []string{"team-a/deserved"}, passing: 2,
		changeHas: "2 of minMember 3 exist",
	}, {
		name: "gang admitted that the nodes do not take",
		in: ExplainInput{PodGroup: ptr(pg("ml", "apart", 2, team, map[string]string{
			qapi.AdmittedAtAnnotation: "2026-12-02T12:00:05Z",
			qapi.VerdictAnnotation:    "admitted, but its members cannot be placed: 1/2 members unschedulable: 0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.",
		}, "")), Pods: members("apart", 2, 0, ""), Queues: queues, DefaultQueue: "default"},
		stage: "Unschedulable", needs: "cpu=2", failing: []string{"team-a/deserved"}, passing: 2, verdictHas: "anti-affinity",
	}, {
		name: "gang reserved",
		in: ExplainInput{PodGroup: ptr(pg("ml", "train", 3, team, map[string]string{qapi.VerdictAnnotation: verdict[qapi.VerdictAnnotation],
			qapi.ExpectedStartAnnotation: "2026-12-02T12:05:30Z"}, "")), Pods: members("train", 3, 0, ""), Queues: queues, DefaultQueue: "default"},
		stage: "WaitingForAdmission", needs: "cpu=3", failing: []string{"team-a/deserved", "org/capability"}, passing: 1,
		verdictHas: "remaining capability 2", startsHas: "by 2026-12-02T12:05:30Z (reserved",
	}, {
		name: "gang with an estimated start",
		in: ExplainInput{PodGroup: ptr(pg("ml", "train", 3, team, map[string]string{qapi.VerdictAnnotation: verdict[qapi.VerdictAnnotation],
			qapi.EstimatedStartAnnotation: "2026-12-02T12:05:30Z"}, "")), Pods: members("train", 3, 0, ""), Queues: queues, DefaultQueue: "default"},
		stage: "WaitingForAdmission", needs: "cpu=3", failing: []string{"team-a/deserved", "org/capability"}, passing: 1,
		verdictHas: "remaining capability 2", startsHas: "about 2026-12-02T12:05:30Z (an estimate",
	}, {
		name:  "gang running",
		in:    ExplainInput{PodGroup: ptr(pg("ml", "train", 2, team, nil, v1alpha1.PodGroupRunning)), Pods: members("train", 2, 2, ""), Queues: queues},
		stage: "Running",
	}, {
		name: "singleton no node fits",
		in: ExplainInput{Pods: []corev1.Pod{held(withCPU(pod("ml", "solo", "", "", sched, corev1.PodPending, nil), "500m"),
			corev1.PodReasonUnschedulable, "0/3 nodes are available: 3 Insufficient cpu.")}, NamespaceQueue: "team-a", Queues: queues, DefaultQueue: "default"},
		stage: "Unschedulable", needs: "cpu=500m", passing: 3, changeHas: "no node fits", verdictHas: "Insufficient cpu",
	}, {
		name: "singleton in the default queue, admitted, not yet bound",
		in:   ExplainInput{Pods: []corev1.Pod{withCPU(pod("ml", "solo", "", "", sched, corev1.PodPending, nil), "1")}, Queues: queues, DefaultQueue: "default"},
		// No Queue named default exists: no checks, and nothing is
		// claimed about it.
		stage: "Unknown", needs: "cpu=1",
	}, {
		name: "gang with minResources larger than its members",
		in: func() ExplainInput {
			g := pg("ml", "spark", 1, team, nil, "")
			g.Spec.MinResources = cpuList("5")
			return ExplainInput{PodGroup: &g, Pods: members("spark", 1, 0, ""), Queues: queues, DefaultQueue: "default"}
		}(),
		stage: "Unknown", needs: "cpu=5", failing: []string{"team-a/deserved", "org/capability", "org/deserved"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Explain(tt.in, t0)
			if e.Stage != tt.stage {
				t.Errorf("stage %q, want %q", e.Stage, tt.stage)
			}
			if got := resources(e.Needs); (tt.needs == "" && got != "-") || (tt.needs != "" && got != tt.needs) {
				t.Errorf("needs %s, want %q", got, tt.needs)
			}
			var failing []string
			passing := 0
			for _, c := range e.Checks {
				if c.OK {
					passing++
				} else {
					failing = append(failing, c.Queue+"/"+c.Check)
				}
			}
			if strings.Join(failing, " ") != strings.Join(tt.failing, " ") || passing != tt.passing {
				t.Errorf("failing checks %v (and %d passing), want %v (and %d): %+v", failing, passing, tt.failing, tt.passing, e.Checks)
			}
			if !strings.Contains(strings.Join(e.Changes, "\n"), tt.changeHas) {
				t.Errorf("changes %q lack %q", e.Changes, tt.changeHas)
			}
			if !strings.Contains(e.Verdict, tt.verdictHas) {
				t.Errorf("verdict %q lacks %q", e.Verdict, tt.verdictHas)
			}
			var b bytes.Buffer
			if err := printExplanation(&b, e, "table"); err != nil || !strings.Contains(b.String(), "stage "+tt.stage) {
				t.Errorf("table output (err %v):\n%s", err, b.String())
			}
			if has := strings.Contains(b.String(), "starts "); has != (tt.startsHas != "") || !strings.Contains(b.String(), tt.startsHas) {
				t.Errorf("table output's starts line, want %q:\n%s", tt.startsHas, b.String())
			}
		})
	}
}

// TestNewestEvents: the newest Events, oldest first, bounded.
func TestNewestEvents(t *testing.T) {
	var evs []eventsv1.Event
	for i := range 7 {
		evs = append(evs, event("u", "R"+string(rune('0'+i)), "n", t0.Add(-time1(i))))
	}
	got := newestEvents(evs, 3)
	if len(got) != 3 || !strings.Contains(got[0], "R2") || !strings.Contains(got[2], "R0") {
		t.Errorf("newest events %q, want R2 R1 R0", got)
	}
}

func ptr[T any](v T) *T { return &v }

func time1(i int) time.Duration { return time.Duration(i) * time.Second }

// TestGroupOf: the label wins; else the gang asked for by annotation (named
// after the pod's controller); else none.
func TestGroupOf(t *testing.T) {
	yes := true
	owned := pod("ml", "train-0", "", "", "caldera-scheduler", corev1.PodPending, nil)
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "train", UID: "u1", Controller: &yes}}
	owned.Annotations = map[string]string{qapi.GangMinMemberAnnotation: "2"}
	labelled := owned
	labelled.Labels = map[string]string{v1alpha1.PodGroupLabel: "hand-written"}
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want string
	}{
		{"annotation", owned, "job-train"},
		{"label wins", labelled, "hand-written"},
		{"neither", pod("ml", "solo", "", "", "caldera-scheduler", corev1.PodPending, nil), ""},
	} {
		if got := groupOf(&tc.pod); got != tc.want {
			t.Errorf("%s: groupOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}
