package volcano

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/resources"
)

func rl(pairs ...string) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[v1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

var created = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func TestSpec(t *testing.T) {
	res := rl("cpu", "4", "memory", "8Gi")
	for _, tc := range []struct {
		name string
		in   vc.PodGroup
		// want
		min               int32
		minRes            resources.List
		queue             string
		admitted, started bool
	}{
		{name: "pending, queue and minResources",
			in:  vc.PodGroup{Spec: vc.PodGroupSpec{MinMember: 3, Queue: "team-a", MinResources: &res}},
			min: 3, minRes: resources.List{"cpu": 4000, "memory": 8 << 30}, queue: "team-a"},
		{name: "no queue: the namespace's or the default decides",
			in:  vc.PodGroup{Spec: vc.PodGroupSpec{MinMember: 1}},
			min: 1},
		{name: "Caldera's label wins over spec.queue",
			in: vc.PodGroup{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{qapi.QueueLabel: "mine"}},
				Spec: vc.PodGroupSpec{MinMember: 2, Queue: "theirs"}},
			min: 2, queue: "mine"},
		{name: "Inqueue: admitted by an earlier scheduler",
			in:  vc.PodGroup{Spec: vc.PodGroupSpec{MinMember: 2, Queue: "q"}, Status: vc.PodGroupStatus{Phase: vc.PodGroupInqueue}},
			min: 2, queue: "q", admitted: true},
		{name: "Completed: admitted; its phase says it started",
			in:  vc.PodGroup{Spec: vc.PodGroupSpec{MinMember: 2}, Status: vc.PodGroupStatus{Phase: vc.PodGroupCompleted}},
			min: 2, admitted: true, started: true},
		{name: "Running: admitted and started",
			in:  vc.PodGroup{Spec: vc.PodGroupSpec{MinMember: 2}, Status: vc.PodGroupStatus{Phase: vc.PodGroupRunning}},
			min: 2, admitted: true, started: true},
		{name: "Pending with Caldera's admitted-at annotation of this object: admitted",
			in: vc.PodGroup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{qapi.AdmittedAtAnnotation: "2026-01-02T03:05:00Z"}},
				Spec: vc.PodGroupSpec{MinMember: 2}},
			min: 2, admitted: true},
		{name: "an admitted-at annotation older than the object is an earlier object's",
			in: vc.PodGroup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{qapi.AdmittedAtAnnotation: "2026-01-02T03:00:00Z"}},
				Spec: vc.PodGroupSpec{MinMember: 2}},
			min: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.DeepCopy()
			in.Name, in.Namespace, in.UID, in.ResourceVersion, in.CreationTimestamp = "pg", "ns", "uid-1", "7", created
			before := in.DeepCopy()
			got := Spec(in)
			want := groupspec.Source{Dialect: groupspec.Volcano, APIVersion: APIVersion, Namespace: "ns", Name: "pg",
				UID: "uid-1", ResourceVersion: "7", Created: created.Time}
			if got.Source != want {
				t.Errorf("source = %+v, want %+v", got.Source, want)
			}
			if got.Gang.MinMember != tc.min {
				t.Errorf("minMember = %d, want %d", got.Gang.MinMember, tc.min)
			}
			if !got.Gang.MinResources.Equal(tc.minRes) || (got.Gang.MinResources == nil) != (tc.minRes == nil) {
				t.Errorf("minResources = %v, want %v", got.Gang.MinResources, tc.minRes)
			}
			if got.Queue != tc.queue {
				t.Errorf("queue = %q, want %q", got.Queue, tc.queue)
			}
			if got.Admitted != tc.admitted || got.Started != tc.started {
				t.Errorf("admitted, started = %v, %v; want %v, %v", got.Admitted, got.Started, tc.admitted, tc.started)
			}
			if !got.Rules.MembersAfterAdmission || got.Rules.DisruptAll {
				t.Errorf("rules = %+v, want members created after admission only", got.Rules)
			}
			if !equality.Semantic.DeepEqual(in, before) {
				t.Errorf("the informer's object was changed")
			}
		})
	}
}

func TestGroupName(t *testing.T) {
	for _, tc := range []struct {
		ann  map[string]string
		want string
	}{
		{map[string]string{GroupNameAnnotation: "a"}, "a"},
		{map[string]string{VolcanoGroupNameAnnotation: "b"}, "b"},
		{map[string]string{GroupNameAnnotation: "a", VolcanoGroupNameAnnotation: "b"}, "a"},
		{map[string]string{GroupNameAnnotation: ""}, ""},
		{nil, ""},
	} {
		got, ok := GroupName(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.ann}})
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("GroupName(%v) = %q, %v; want %q", tc.ann, got, ok, tc.want)
		}
	}
}

func TestQueue(t *testing.T) {
	capab, guar := rl("cpu", "10"), rl("cpu", "2")
	for _, tc := range []struct {
		name    string
		in      vc.Queue
		want    qapi.QueueSpec
		ignored []string
		skip    bool
	}{
		{name: "every mapped field",
			in: vc.Queue{Spec: vc.QueueSpec{Weight: 3, Capability: capab, Guarantee: vc.Guarantee{Resource: guar},
				Reclaimable: ptr.To(false), Parent: "org", Priority: 7}, Status: vc.QueueStatus{State: vc.QueueStateOpen}},
			want: qapi.QueueSpec{Weight: 3, Capability: capab, Guarantee: guar, Reclaimable: ptr.To(false), Parent: "org", Priority: 7, State: qapi.QueueStateOpen}},
		{name: "defaults: weight 1, open, child of root is top level",
			in:   vc.Queue{Spec: vc.QueueSpec{Parent: RootQueue}},
			want: qapi.QueueSpec{Weight: 1, State: qapi.QueueStateOpen}},
		{name: "Closed stops admission",
			in:   vc.Queue{Spec: vc.QueueSpec{Weight: 1}, Status: vc.QueueStatus{State: vc.QueueStateClosed}},
			want: qapi.QueueSpec{Weight: 1, State: qapi.QueueStateClosed}},
		{name: "Closing stops admission too",
			in:   vc.Queue{Spec: vc.QueueSpec{Weight: 1}, Status: vc.QueueStatus{State: vc.QueueStateClosing}},
			want: qapi.QueueSpec{Weight: 1, State: qapi.QueueStateClosed}},
		{name: "fields Caldera does not honour are named",
			in: vc.Queue{Spec: vc.QueueSpec{Weight: 1, Deserved: rl("cpu", "1"), Affinity: &vc.Affinity{},
				ExtendClusters: []vc.Cluster{{Name: "x"}}, Type: "x"}},
			want:    qapi.QueueSpec{Weight: 1, State: qapi.QueueStateOpen},
			ignored: []string{"spec.deserved", "spec.affinity", "spec.extendClusters", "spec.type"}},
		{name: "root is the tree, not a queue", in: vc.Queue{ObjectMeta: metav1.ObjectMeta{Name: RootQueue}}, skip: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.DeepCopy()
			if in.Name == "" {
				in.Name = "q"
			}
			got, ignored, ok := Queue(in)
			if ok == tc.skip {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				return
			}
			if !IsVolcanoQueue(got) || got.Name != in.Name {
				t.Errorf("model: %v %q", got.TypeMeta, got.Name)
			}
			if !equality.Semantic.DeepEqual(got.Spec, tc.want) {
				t.Errorf("spec = %+v, want %+v", got.Spec, tc.want)
			}
			// Volcano allocates only in Open queues: a Closed or Closing
			// one holds placement too.
			if held := got.Annotations[dialect.HoldPlacementAnnotation] == "true"; held != (tc.want.State == qapi.QueueStateClosed) {
				t.Errorf("holds placement = %v for state %q", held, in.Status.State)
			}
			if _, set := in.Annotations[dialect.HoldPlacementAnnotation]; set {
				t.Errorf("the informer's object was changed")
			}
			var names []string
			for _, i := range ignored {
				if i.Why == "" {
					t.Errorf("%s: no reason", i.Field)
				}
				names = append(names, i.Field)
			}
			if !equality.Semantic.DeepEqual(names, tc.ignored) {
				t.Errorf("ignored = %v, want %v", names, tc.ignored)
			}
		})
	}
}

func TestStatus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		p      groupspec.Progress
		phase  vc.PodGroupPhase
		cond   vc.PodGroupConditionType
		reason string
	}{
		{name: "not admitted, no pods", p: groupspec.Progress{MinMember: 3, Why: "queue q: capability"},
			phase: vc.PodGroupPending, cond: vc.PodGroupUnschedulableType, reason: vc.NotEnoughResourcesReason},
		{name: "admitted before any pod: Inqueue", p: groupspec.Progress{Admitted: true, MinMember: 3},
			phase: vc.PodGroupInqueue},
		{name: "admitted, pods short: Inqueue, nothing wrong", p: groupspec.Progress{Admitted: true, MinMember: 3, Members: 1},
			phase: vc.PodGroupInqueue},
		{name: "admitted, members find no node", p: groupspec.Progress{Admitted: true, MinMember: 3, Members: 3, Why: "0/2 nodes: cpu"},
			phase: vc.PodGroupInqueue, cond: vc.PodGroupUnschedulableType, reason: vc.NotEnoughResourcesReason},
		{name: "minMember placed: Running", p: groupspec.Progress{Admitted: true, MinMember: 2, Members: 2, Placed: 2},
			phase: vc.PodGroupRunning, cond: vc.PodGroupScheduled, reason: ReasonScheduled},
		{name: "running and succeeded count as allocated", p: groupspec.Progress{Admitted: true, MinMember: 2, Members: 2, Placed: 1, Running: 1, Succeeded: 1},
			phase: vc.PodGroupRunning},
		{name: "every allocated member succeeded: Completed", p: groupspec.Progress{Admitted: true, MinMember: 2, Members: 2, Succeeded: 2},
			phase: vc.PodGroupCompleted},
		{name: "one failed: Running, as Volcano writes it", p: groupspec.Progress{Admitted: true, MinMember: 2, Members: 2, Succeeded: 1, Failed: 1},
			phase: vc.PodGroupRunning},
		{name: "some run, the rest cannot be placed: Unknown", p: groupspec.Progress{Admitted: true, MinMember: 3, Members: 3, Placed: 1, Running: 1, Why: "no room"},
			phase: vc.PodGroupUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Status(vc.PodGroupStatus{}, tc.p, now)
			if got.Phase == vc.PodGroupCompleted {
				// Once its pods are gone, a Completed PodGroup stays so.
				if gone := Status(got, groupspec.Progress{Admitted: tc.p.Admitted, MinMember: tc.p.MinMember}, now); gone.Phase != vc.PodGroupCompleted || gone.Succeeded != got.Succeeded {
					t.Errorf("pods gone: %+v, want the Completed status kept", gone)
				}
			}
			if got.Phase != tc.phase {
				t.Errorf("phase = %s, want %s", got.Phase, tc.phase)
			}
			if got.Running != int32(tc.p.Running) || got.Succeeded != int32(tc.p.Succeeded) || got.Failed != int32(tc.p.Failed) {
				t.Errorf("counts = %d/%d/%d", got.Running, got.Succeeded, got.Failed)
			}
			if tc.cond != "" {
				found := false
				for _, c := range got.Conditions {
					if c.Type == tc.cond && c.Status == v1.ConditionTrue {
						found = true
						if tc.reason != "" && c.Reason != tc.reason {
							t.Errorf("%s reason = %q, want %q", c.Type, c.Reason, tc.reason)
						}
					}
				}
				if !found {
					t.Errorf("no %s condition in %+v", tc.cond, got.Conditions)
				}
			}
			if tc.p.Why == "" && hasTrue(got, vc.PodGroupUnschedulableType) {
				t.Errorf("a True Unschedulable condition in %+v: Volcano's job controller makes a Warning Event of it at every sync", got.Conditions)
			}
			// Applied again later with the same progress, nothing changes:
			// the writer compares and writes nothing.
			again := Status(got, tc.p, now.Add(time.Minute))
			if !equality.Semantic.DeepEqual(again, got) {
				t.Errorf("status not stable:\n%+v\n%+v", got, again)
			}
		})
	}
}

// TestStatusAdmittedClearsRefusal: a refusal written while the gang was
// pending is put to False once it is admitted and only waits for its
// pods; its time moves only when it changes.
func TestStatusAdmittedClearsRefusal(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pending := Status(vc.PodGroupStatus{}, groupspec.Progress{MinMember: 4, Why: "queue q: capability cpu"}, now)
	if !hasTrue(pending, vc.PodGroupUnschedulableType) {
		t.Fatalf("pending: %+v, want a True Unschedulable condition", pending.Conditions)
	}
	admitted := Status(*pending.DeepCopy(), groupspec.Progress{Admitted: true, MinMember: 4}, now.Add(time.Minute))
	if admitted.Phase != vc.PodGroupInqueue || hasTrue(admitted, vc.PodGroupUnschedulableType) {
		t.Fatalf("admitted: %s %+v, want Inqueue and no True Unschedulable condition", admitted.Phase, admitted.Conditions)
	}
	c := admitted.Conditions[0]
	if c.Status != v1.ConditionFalse || c.Reason != ReasonAdmitted || !c.LastTransitionTime.Time.Equal(now.Add(time.Minute)) {
		t.Errorf("condition %+v, want False, %s, at the admission", c, ReasonAdmitted)
	}
	if again := Status(*admitted.DeepCopy(), groupspec.Progress{Admitted: true, MinMember: 4, Members: 2}, now.Add(2*time.Minute)); !equality.Semantic.DeepEqual(again, admitted) {
		t.Errorf("pods arriving changed the status: %+v", again)
	}
}

func hasTrue(st vc.PodGroupStatus, typ vc.PodGroupConditionType) bool {
	for _, c := range st.Conditions {
		if c.Type == typ && c.Status == v1.ConditionTrue {
			return true
		}
	}
	return false
}

// TestMinResources reads each name form Volcano's job controller writes
// into minResources (quotacore.PodUsageFunc, extended names unprefixed)
// or a user may write by hand.
func TestMinResources(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in, out v1.ResourceList
	}{
		{"nil stays nil", nil, nil},
		{"plain names kept", rl("cpu", "4", "memory", "8Gi"), rl("cpu", "4", "memory", "8Gi")},
		{"count quotas dropped", rl("count/pods", "4", "cpu", "2"), rl("cpu", "2")},
		{"pods dropped: minMember counts members", rl("pods", "4", "cpu", "2"), rl("cpu", "2")},
		{"requests.X beside X: X says it once", rl("requests.cpu", "2", "cpu", "2", "requests.memory", "1Gi", "memory", "1Gi"),
			rl("cpu", "2", "memory", "1Gi")},
		{"requests.X alone stands for X", rl("requests.cpu", "3", "requests.memory", "2Gi"), rl("cpu", "3", "memory", "2Gi")},
		{"limits dropped", rl("limits.cpu", "8", "limits.memory", "16Gi", "cpu", "2"), rl("cpu", "2")},
		{"extended resource kept", rl("nvidia.com/gpu", "8", "requests.nvidia.com/gpu", "8"), rl("nvidia.com/gpu", "8")},
		{"extended resource by requests. alone", rl("requests.nvidia.com/gpu", "4"), rl("nvidia.com/gpu", "4")},
		{"hugepages and ephemeral storage kept", rl("hugepages-2Mi", "1Gi", "ephemeral-storage", "10Gi"), rl("hugepages-2Mi", "1Gi", "ephemeral-storage", "10Gi")},
		{"non-scalar quota names dropped", rl("services", "2", "persistentvolumeclaims", "1", "requests.storage", "10Gi"), rl()},
		{"the controller's whole list for 4 pods of 1 cpu, 1Gi, 1 gpu",
			rl("count/pods", "4", "pods", "4", "cpu", "4", "requests.cpu", "4", "limits.cpu", "8",
				"memory", "4Gi", "requests.memory", "4Gi", "limits.memory", "8Gi",
				"nvidia.com/gpu", "4", "requests.nvidia.com/gpu", "4", "limits.nvidia.com/gpu", "4"),
			rl("cpu", "4", "memory", "4Gi", "nvidia.com/gpu", "4")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MinResources(tc.in)
			if (got == nil) != (tc.out == nil) || !equality.Semantic.DeepEqual(got, tc.out) {
				t.Errorf("MinResources(%v) = %v, want %v", tc.in, got, tc.out)
			}
		})
	}
}
