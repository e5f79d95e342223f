// Package reservation is the CalderaReservation plugin: a Filter that keeps
// pods out of the room admission reserved over time for a waiting group.
//
// Admission (pkg/cache/timeplan.go) gives a queue's head that cannot start
// now the earliest time its members fit, on named nodes, and lets other work
// start now only if it cannot delay that start. kube-scheduler, though, places
// an admitted pod on any node that fits it now, and would take the reserved
// room as readily as room no one needs. This plugin refuses a node when
// placing the pod there would leave too little for a reservation at its start.
// The rule and its state live in the cache (Cache.ReservedRoom); this package
// turns them into framework statuses.
package reservation

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/plugins/args"
	"github.com/caldera-sched/caldera/pkg/resources"
	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// Name is the plugin's name in KubeSchedulerConfiguration.
const Name = "CalderaReservation"

// stateKey holds the cycle's holds (PreFilter) for Filter.
const stateKey fwk.StateKey = Name + "/holds"

// Reservation filters nodes whose room is reserved for another group.
type Reservation struct {
	cache rooms
	// now is the clock PreFilter reads the reservations at; tests fix it.
	now func() time.Time
}

// rooms is what the plugin asks of the shared cache (*cache.Cache).
type rooms interface {
	// ReservedRoom returns, per node, the holds pod must leave room for if
	// it is placed there at now; nil when there are none.
	ReservedRoom(pod *v1.Pod, now time.Time) map[string][]admission.NodeHold
}

var _ rooms = (*cache.Cache)(nil)

var (
	_ fwk.PreFilterPlugin   = &Reservation{}
	_ fwk.FilterPlugin      = &Reservation{}
	_ fwk.EnqueueExtensions = &Reservation{}
	_ fwk.SignPlugin        = &Reservation{}
)

// New builds the plugin for one profile; every profile shares the cache of
// p. The plugin takes no args: any given are refused, so that a misspelt
// setting is a start-up error rather than silently ignored.
func New(ctx context.Context, obj runtime.Object, h fwk.Handle, p *cache.Provider) (fwk.Plugin, error) {
	if err := args.Decode(Name, obj, &struct{}{}); err != nil {
		return nil, err
	}
	c, err := p.Get(ctx, h)
	if err != nil {
		return nil, err
	}
	return &Reservation{cache: c, now: time.Now}, nil
}

// Name returns the plugin name.
func (pl *Reservation) Name() string { return Name }

// state is one cycle's holds, read-only after PreFilter.
type state struct {
	holds map[string][]admission.NodeHold
	// request is the pod's request as the cache counts it.
	request resources.List
}

// Clone shares the state: nothing changes it after PreFilter, and the
// preemption dry runs, which clone the cycle state, only remove or add
// other pods, which Filter reads from the NodeInfo.
func (s *state) Clone() fwk.StateData { return s }

// PreFilter reads, once per cycle, the holds the pod must leave room for.
// Most pods have none (no group holds a reservation, or the pod's run-time
// limit ends before every reservation starts): Skip, and Filter is not
// called for them.
func (pl *Reservation) PreFilter(_ context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	holds := pl.cache.ReservedRoom(pod, pl.now())
	if len(holds) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	cs.Write(stateKey, &state{holds: holds, request: convert.PodRequest(pod)})
	return nil, nil
}

// PreFilterExtensions returns nil: the state holds nothing about other pods.
func (pl *Reservation) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter refuses the node when, for one of its holds (earliest first) and a
// resource the pod requests, what is free on the node now plus what running
// pods give back by the hold's start, less the pod's request, is below what
// the reservations need there at that start. Unschedulable, not
// UnschedulableAndUnresolvable: the room comes back when pods end, and
// evicting pods on the node can make it. O(holds on the node x resources).
func (pl *Reservation) Filter(_ context.Context, cs fwk.CycleState, _ *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	s, err := readState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	hs := s.holds[ni.Node().Name]
	if len(hs) == 0 {
		return nil
	}
	free := convert.NodeFree(ni)
	for _, h := range hs {
		if !leaves(free, h, s.request) {
			return fwk.NewStatus(fwk.Unschedulable, Reason(h))
		}
	}
	return nil
}

// leaves says whether a pod requesting req, placed on a node with free
// room now, leaves hold h its need at its start. A resource the pod does
// not request is not checked: placing the pod cannot take it, so refusing
// the node would not keep the reservation whole.
func leaves(free resources.List, h admission.NodeHold, req resources.List) bool {
	for name, need := range h.Need {
		r := req[name]
		if need <= 0 || r <= 0 {
			continue
		}
		if free[name]+h.ReleasedBy[name]-r < need {
			return false
		}
	}
	return true
}

// Reason is the Filter's reason for a node refused for hold h. It names
// the reservation and its start, never the node: kube-scheduler counts the
// nodes per reason ("3 room reserved for ..."), and a reason per node would
// list every reserved node in the pod's condition.
func Reason(h admission.NodeHold) string {
	return fmt.Sprintf("room reserved for %s from %s", h.Reservation, h.Start.UTC().Format(time.RFC3339))
}

// readState returns the state PreFilter wrote.
func readState(cs fwk.CycleState) (*state, error) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", stateKey, err)
	}
	s, ok := d.(*state)
	if !ok {
		return nil, fmt.Errorf("%s holds %T", stateKey, d)
	}
	return s, nil
}

// SignPod keeps kube-scheduler's opportunistic batching (KEP-5598): a
// PreFilter or Filter plugin that does not sign turns it off for every pod
// of the profile. Which holds a pod must respect depend, besides the
// cluster's state, on its run-time limit (a pod that ends before a
// reservation starts may use its room) and on its group (its own
// reservation holds nothing against it), so both are fragments; the
// request is NodeResourcesFit's fragment. A node the batch hints is
// filtered again in the pod's own cycle, so a reservation made after the
// pod was signed still holds.
func (pl *Reservation) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	// The pod's own limit; its PodGroup's, which ReservedRoom reads too,
	// is the same for every pod of the group, which Group() separates.
	l, _ := runlimit.Of(pod, nil)
	out := []fwk.SignFragment{{Key: Name + ".RunLimit()", Value: l.Hold()}}
	if key, member := gangbook.GroupKeyOf(pod); member {
		out = append(out, fwk.SignFragment{Key: Name + ".Group()", Value: key.String()})
	}
	return out, nil
}
