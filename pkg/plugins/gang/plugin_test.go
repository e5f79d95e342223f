package gang

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/cache"
	policy "github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// fakeGroups answers the plugin's questions from its fields and records what
// the plugin tells it, one string per call.
type fakeGroups struct {
	enqMember, enqOK bool
	enqMsg           string

	pfMember bool
	pfCode   admission.PreFilterCode
	pfMsg    string

	inFlight bool
	node     string

	releases bool // ReleaseSingleton's answer
	permit   cache.PermitResult

	calls []string
}

func (f *fakeGroups) Enqueueable(*v1.Pod) (bool, bool, string) {
	return f.enqMember, f.enqOK, f.enqMsg
}

func (f *fakeGroups) PreFilter(*v1.Pod, time.Time) (bool, admission.PreFilterCode, string) {
	return f.pfMember, f.pfCode, f.pfMsg
}

func (f *fakeGroups) GangPlan(*v1.Pod) (string, bool) { return f.node, f.inFlight }

func (f *fakeGroups) ReleaseSingleton(*v1.Pod, time.Time) bool {
	f.calls = append(f.calls, "ReleaseSingleton")
	return f.releases
}

func (f *fakeGroups) Unschedulable(_ klog.Logger, _ *v1.Pod, _ time.Time, _ policy.Backoff, reason string) {
	f.calls = append(f.calls, "Unschedulable: "+reason)
}

func (f *fakeGroups) RejectWaiting(_ *v1.Pod, msg string) {
	f.calls = append(f.calls, "RejectWaiting: "+msg)
}

func (f *fakeGroups) Reserve(*v1.Pod) { f.calls = append(f.calls, "Reserve") }

func (f *fakeGroups) Unreserve(_ klog.Logger, _ *v1.Pod, _ time.Time, _ policy.Backoff, timeout time.Duration) {
	f.calls = append(f.calls, "Unreserve: "+timeout.String())
}

func (f *fakeGroups) Permit(_ klog.Logger, _ *v1.Pod, _ time.Time, timeout time.Duration, plugin string) cache.PermitResult {
	f.calls = append(f.calls, "Permit: "+timeout.String()+" "+plugin)
	return f.permit
}

// snapshotHandle is the part of fwk.Handle PostFilter reads: the nodes.
type snapshotHandle struct {
	fwk.Handle
	snapshot *internalcache.Snapshot
}

func (h snapshotHandle) SnapshotSharedLister() fwk.SharedLister { return h.snapshot }

func member(name, group string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)}}
	if group != "" {
		p.Labels = map[string]string{gangbook.PodGroupLabel: group}
	}
	return p
}

func plugin(f *fakeGroups, nodes ...string) *Gang {
	var ns []*v1.Node
	for _, n := range nodes {
		ns = append(ns, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	return &Gang{
		handle:        snapshotHandle{snapshot: internalcache.NewSnapshot(nil, ns)},
		cache:         f,
		plans:         f,
		backoff:       policy.Backoff{Base: time.Second, Max: time.Minute},
		permitTimeout: 30 * time.Second,
	}
}

func TestPreEnqueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    fakeGroups
		want fwk.Code
	}{
		{"a member of a gang with its minimum", fakeGroups{enqMember: true, enqOK: true}, fwk.Success},
		{"a pod outside any gang", fakeGroups{enqOK: true}, fwk.Success},
		{"a member of a gang short of its minimum", fakeGroups{enqMember: true, enqMsg: "waiting for 2 more members"}, fwk.UnschedulableAndUnresolvable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := plugin(&tc.f).PreEnqueue(context.Background(), member("m", "g"))
			if st.Code() != tc.want || (tc.f.enqMsg != "" && st.Message() != tc.f.enqMsg) {
				t.Errorf("PreEnqueue = %v, want %v with %q", st, tc.want, tc.f.enqMsg)
			}
		})
	}
}

func TestPreFilter(t *testing.T) {
	for _, tc := range []struct {
		name        string
		f           fakeGroups
		want        fwk.Code
		extra, defi bool // what the cycle state records
	}{
		{"a pod outside any gang", fakeGroups{}, fwk.Success, false, false},
		{"a member that may go on", fakeGroups{pfMember: true}, fwk.Success, false, false},
		{"a gang backing off", fakeGroups{pfMember: true, pfCode: admission.PreFilterBackoff, pfMsg: "backing off"}, fwk.UnschedulableAndUnresolvable, false, false},
		{"a gang larger than the cluster", fakeGroups{pfMember: true, pfCode: admission.PreFilterTooLarge, pfMsg: "too large"}, fwk.UnschedulableAndUnresolvable, false, false},
		{"a member whose PodGroup vanished", fakeGroups{pfMember: true, pfCode: admission.PreFilterNoGroup, pfMsg: "no PodGroup"}, fwk.UnschedulableAndUnresolvable, false, false},
		{"an extra member over capability", fakeGroups{pfMember: true, pfCode: admission.PreFilterOverCapability, pfMsg: "over capability"}, fwk.UnschedulableAndUnresolvable, true, false},
		// No plan: evicting pods cannot lift a deserved share; the gang is
		// not released (extraKey).
		{"an extra member above its queue's share", fakeGroups{pfMember: true, pfCode: admission.PreFilterOverShare, pfMsg: "over share"}, fwk.UnschedulableAndUnresolvable, true, false},
		{"an extra member before the minimum binds", fakeGroups{pfMember: true, pfCode: admission.PreFilterExtraEarly, pfMsg: "minimum first"}, fwk.UnschedulableAndUnresolvable, true, false},
		// Unschedulable, not unresolvable: CalderaReclaim must plan the
		// evictions that free the room, for gangs and singletons alike.
		{"a gang's minimum in a capability deficit", fakeGroups{pfMember: true, pfCode: admission.PreFilterCapabilityDeficit, pfMsg: "deficit"}, fwk.Unschedulable, false, true},
		{"a singleton in a capability deficit", fakeGroups{pfCode: admission.PreFilterCapabilityDeficit, pfMsg: "deficit"}, fwk.Unschedulable, false, true},
		// Queued while its unit waited for room, refused since for quota:
		// it must not go on to bind unadmitted.
		{"a member whose gang is not admitted", fakeGroups{pfMember: true, pfCode: admission.PreFilterNotAdmitted, pfMsg: "over capability"}, fwk.UnschedulableAndUnresolvable, false, false},
		{"a singleton not admitted", fakeGroups{pfCode: admission.PreFilterNotAdmitted, pfMsg: "over capability"}, fwk.UnschedulableAndUnresolvable, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := framework.NewCycleState()
			_, st := plugin(&tc.f).PreFilter(context.Background(), state, member("m", "g"), nil)
			if st.Code() != tc.want || (tc.want != fwk.Success && st.Message() != tc.f.pfMsg) {
				t.Errorf("PreFilter = %v, want %v with %q", st, tc.want, tc.f.pfMsg)
			}
			_, err := state.Read(extraKey)
			if got := err == nil; got != tc.extra {
				t.Errorf("extra recorded = %v, want %v", got, tc.extra)
			}
			d, defi := readDeficit(state)
			if defi != tc.defi || (defi && d.msg != tc.f.pfMsg) {
				t.Errorf("deficit recorded = %v (%q), want %v", defi, d.msg, tc.defi)
			}
		})
	}
}

func TestPostFilter(t *testing.T) {
	insufficient := framework.NewNodeToStatus(map[string]*fwk.Status{
		"n1": fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"),
		"n2": fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu"),
	}, fwk.NewStatus(fwk.UnschedulableAndUnresolvable))
	ours := framework.NewNodeToStatus(map[string]*fwk.Status{
		"n1": fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "backing off").WithPlugin(Name),
		"n2": fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "backing off").WithPlugin(Name),
	}, fwk.NewStatus(fwk.UnschedulableAndUnresolvable))
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		f        fakeGroups
		extra    bool
		deficit  string // the deficit PreFilter recorded, if any
		statuses fwk.NodeToStatusReader
		calls    []string
		msg      string
		clears   bool // the result drops the pod's nomination
	}{
		{
			name: "a gang with no plan is released with the nodes' reasons", pod: member("m", "g"), statuses: insufficient,
			calls: []string{"Unschedulable: 0/2 nodes are available: 2 Insufficient cpu."}, msg: "gang released", clears: true,
		},
		{
			name: "a gang whose plan evicts only waits", pod: member("m", "g"), f: fakeGroups{inFlight: true}, statuses: insufficient,
			msg: "waiting for the victims of the gang's reclaim plan to leave",
		},
		{
			name: "our own PreFilter's refusal rejects the waiting siblings", pod: member("m", "g"), statuses: ours,
			calls: []string{"RejectWaiting: backing off"}, clears: true,
		},
		{
			// Nor does it hold a nomination an earlier cycle's plan left:
			// kept, it held a node against lower priorities for as long
			// as the queue had no room (random seed 9036).
			name: "an extra member over capability releases nothing and holds no nomination", pod: member("m", "g"), extra: true, statuses: insufficient,
			clears: true,
		},
		{
			name: "an extra member whose gang's plan evicts keeps its nomination", pod: member("m", "g"), extra: true, f: fakeGroups{inFlight: true}, statuses: insufficient,
		},
		{
			name: "a gang in a capability deficit with no plan is released", pod: member("m", "g"), deficit: "queue q: cpu 4 over capability", statuses: insufficient,
			calls: []string{"Unschedulable: queue q: cpu 4 over capability"}, msg: "gang released", clears: true,
		},
		{
			name: "a gang in a capability deficit whose plan evicts waits", pod: member("m", "g"), deficit: "over", f: fakeGroups{inFlight: true}, statuses: insufficient,
			msg: "waiting for the victims of the gang's plan to leave its queue's capability",
		},
		{
			name: "a singleton admitted on room only evictions free goes back to its queue", pod: member("s", ""), f: fakeGroups{releases: true}, statuses: insufficient,
			calls: []string{"ReleaseSingleton"}, msg: "released to its queue: no plan frees the room it was admitted on", clears: true,
		},
		{
			name: "a singleton the cache keeps is only unschedulable", pod: member("s", ""), statuses: insufficient,
			calls: []string{"ReleaseSingleton"},
		},
		{
			name: "a singleton whose plan evicts is not released", pod: member("s", ""), f: fakeGroups{inFlight: true, releases: true}, statuses: insufficient,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := framework.NewCycleState()
			if tc.extra {
				state.Write(extraKey, extraRefused{})
			}
			if tc.deficit != "" {
				state.Write(deficitKey, deficitRefused{msg: tc.deficit})
			}
			res, st := plugin(&tc.f, "n1", "n2").PostFilter(context.Background(), state, tc.pod, tc.statuses)
			if st.Code() != fwk.Unschedulable || st.Message() != tc.msg {
				t.Errorf("PostFilter status = %v %q, want Unschedulable %q", st.Code(), st.Message(), tc.msg)
			}
			if !slices.Equal(tc.f.calls, tc.calls) {
				t.Errorf("calls = %q, want %q", tc.f.calls, tc.calls)
			}
			clears := res != nil && res.NominatingInfo != nil && res.NominatingInfo.NominatingMode == fwk.ModeOverride && res.NominatingInfo.NominatedNodeName == ""
			if clears != tc.clears || (!tc.clears && res != nil) {
				t.Errorf("PostFilter result = %+v, want clearing the nomination: %v", res, tc.clears)
			}
		})
	}
}

func TestPermit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		permit  cache.PermitResult
		want    fwk.Code
		timeout time.Duration
	}{
		{"the gang has its minimum", cache.PermitResult{Allow: true}, fwk.Success, 0},
		{"the member waits for its siblings", cache.PermitResult{Timeout: 12 * time.Second, Message: "waiting for 2 members"}, fwk.Wait, 12 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeGroups{permit: tc.permit}
			st, timeout := plugin(f).Permit(context.Background(), nil, member("m", "g"), "n1")
			if st.Code() != tc.want || timeout != tc.timeout || (tc.want == fwk.Wait && st.Message() != tc.permit.Message) {
				t.Errorf("Permit = %v, %v; want %v, %v", st, timeout, tc.want, tc.timeout)
			}
			// The plugin's own default timeout and name reach the cache:
			// it allows the siblings through this plugin's waiting pods.
			if want := []string{"Permit: 30s " + Name}; !slices.Equal(f.calls, want) {
				t.Errorf("calls = %q, want %q", f.calls, want)
			}
		})
	}
}

func TestReserveAndUnreserve(t *testing.T) {
	f := &fakeGroups{}
	g := plugin(f)
	if st := g.Reserve(context.Background(), nil, member("m", "g"), "n1"); !st.IsSuccess() {
		t.Errorf("Reserve = %v", st)
	}
	g.Unreserve(context.Background(), nil, member("m", "g"), "n1")
	if want := []string{"Reserve", "Unreserve: 30s"}; !slices.Equal(f.calls, want) {
		t.Errorf("calls = %q, want %q", f.calls, want)
	}
}

func TestSameGroupPodHint(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		old, new any
		want     fwk.QueueingHint
	}{
		{"a new member of the pod's gang", member("m0", "g"), nil, member("m1", "g"), fwk.Queue},
		{"a member of another gang", member("m0", "g"), nil, member("o1", "other"), fwk.QueueSkip},
		{"a pod outside any gang", member("m0", "g"), nil, member("s", ""), fwk.QueueSkip},
		{"the pending pod is outside any gang", member("s", ""), nil, member("m1", "g"), fwk.QueueSkip},
		{"a pod relabelled into the gang", member("m0", "g"), member("m1", "other"), member("m1", "g"), fwk.Queue},
		{"a pod relabelled out of the gang", member("m0", "g"), member("m1", "g"), member("m1", "other"), fwk.QueueSkip},
		{"the same name in another namespace", member("m0", "g"), nil, func() *v1.Pod { p := member("m1", "g"); p.Namespace = "other"; return p }(), fwk.QueueSkip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sameGroupPod(klog.Background(), tc.pod, tc.old, tc.new)
			if err != nil || got != tc.want {
				t.Errorf("sameGroupPod = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	// An object that is not a pod is an error, and requeues to be safe.
	if got, err := sameGroupPod(klog.Background(), member("m0", "g"), nil, &v1.Node{}); err == nil || got != fwk.Queue {
		t.Errorf("sameGroupPod(node) = %v, %v; want Queue and an error", got, err)
	}
}

func TestQueueAlwaysHint(t *testing.T) {
	if got, err := queueAlways(klog.Background(), member("m", "g"), nil, &v1.Node{}); err != nil || got != fwk.Queue {
		t.Errorf("queueAlways = %v, %v; want Queue", got, err)
	}
}

func TestEventsToRegister(t *testing.T) {
	events, err := plugin(&fakeGroups{}).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[fwk.EventResource]fwk.ActionType{}
	for _, e := range events {
		if e.QueueingHintFn == nil {
			t.Errorf("event %v has no queueing hint", e.Event)
		}
		got[e.Event.Resource] |= e.Event.ActionType
	}
	// PodGroup events are left out on purpose: the cache activates a
	// gang's members itself (see EventsToRegister).
	want := map[fwk.EventResource]fwk.ActionType{
		fwk.UnscheduledPod: fwk.Add,
		fwk.AssignedPod:    fwk.Add | fwk.Delete,
		fwk.Pod:            fwk.UpdatePodLabel,
		fwk.Node:           fwk.Add | fwk.UpdateNodeAllocatable,
	}
	if len(got) != len(want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	for r, a := range want {
		if got[r] != a {
			t.Errorf("events for %s = %v, want %v", r, got[r], a)
		}
	}
}
