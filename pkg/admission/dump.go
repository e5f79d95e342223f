package admission

import (
	"slices"
	"strings"
	"time"

	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// QueueDump is one queue in the cache dump (its JSON form).
type QueueDump struct {
	Name        string         `json:"name"`
	Parent      string         `json:"parent,omitempty"`
	Weight      int32          `json:"weight"`
	Priority    int32          `json:"priority"`
	State       string         `json:"state"`
	Reclaimable bool           `json:"reclaimable"`
	Capability  resources.List `json:"capability,omitempty"`
	Guarantee   resources.List `json:"guarantee,omitempty"`
	Deserved    resources.List `json:"deserved"`
	Allocated   resources.List `json:"allocated"`
	Inflight    resources.List `json:"inflight"`
	Share       float64        `json:"share"`
	// Pending is how many groups of the queue wait for admission.
	Pending int `json:"pending"`
	// Order is the queue's pending units in the order the next admission
	// pass examines them (pg:ns/name for a gang, pod:ns/name for a pod
	// outside any gang); units short of members, and those whose request
	// alone can never fit the queue, are not listed.
	Order []string `json:"order,omitempty"`
}

// QueueFigures is one queue's allocated amount, its descendants'
// included (as Queue status reports it), and, once a pass has divided the
// cluster (Divided), its deserved share and share.
type QueueFigures struct {
	Allocated, Deserved resources.List
	Share               float64
	Divided             bool
}

// QueueFiguresLocked returns the figures of every queue. The caller holds
// the cache's lock. O(queues x depth x resources).
func (a *State) QueueFiguresLocked() map[string]QueueFigures {
	alloc := make(map[string]resources.List, len(a.Usage))
	for name, u := range a.Usage {
		alloc[name] = alloc[name].Add(u.Allocated)
		for _, anc := range a.Tree.Ancestors(name) {
			alloc[anc] = alloc[anc].Add(u.Allocated)
		}
	}
	out := make(map[string]QueueFigures, len(a.Queues))
	for name := range a.Queues {
		f := QueueFigures{Allocated: alloc[name]}
		if a.Shares != nil {
			f.Deserved, f.Share, f.Divided = a.Shares.Deserved(name), a.Shares.Share(name), true
		}
		out[name] = f
	}
	return out
}

// QueueDumpsLocked dumps every queue, by name: its spec, what it and its
// descendants hold, what it reserves, its pending units and share. The
// caller holds the cache's lock. O(queues x depth + units).
func (a *State) QueueDumpsLocked() []QueueDump {
	figs := a.QueueFiguresLocked()
	pending := map[string]int{}
	for _, u := range a.Units {
		if !u.Admitted {
			pending[u.Queue]++
		}
	}
	out := make([]QueueDump, 0, len(a.Queues))
	for name, q := range a.Queues {
		s := convert.QueueSpec(q)
		f := figs[name]
		qd := QueueDump{
			Name: name, Parent: s.Parent, Weight: s.Weight, Priority: s.Priority,
			State: string(s.State), Reclaimable: s.Reclaimable,
			Capability: s.Capability.Clone(), Guarantee: s.Guarantee.Clone(),
			Allocated: f.Allocated.Clone(), Inflight: resources.List{}, Pending: pending[name],
			Order: keyStrings(a.Pending.Order(name)), Deserved: f.Deserved.Clone(), Share: f.Share,
		}
		if u := a.Usage[name]; u != nil {
			qd.Inflight = u.Inflight.Clone()
		}
		if qd.Deserved == nil {
			qd.Deserved = resources.List{}
		}
		if qd.Allocated == nil {
			qd.Allocated = resources.List{}
		}
		out = append(out, qd)
	}
	slices.SortFunc(out, func(x, y QueueDump) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// GroupAdmission is a gang's admission as the cache dump shows it.
type GroupAdmission struct {
	// Queue is the queue its unit waits or runs in; Admitted, whether the
	// unit is admitted.
	Queue    string `json:"queue,omitempty"`
	Admitted bool   `json:"admitted"`
	// ExpectedStart and ReservedNodes are its reservation over time, when
	// the last pass kept one; EstimatedStart, without one, its estimated
	// start (the jobs it waits for declare no run-time limit).
	ExpectedStart  *time.Time `json:"expectedStart,omitempty"`
	ReservedNodes  []string   `json:"reservedNodes,omitempty"`
	EstimatedStart *time.Time `json:"estimatedStart,omitempty"`
}

// GroupAdmissionLocked is the admission of the gang of key. O(1).
func (a *State) GroupAdmissionLocked(key gangbook.GroupKey) GroupAdmission {
	var v GroupAdmission
	uk := GangUnitKey(key)
	if u := a.Units[uk]; u != nil {
		v.Queue, v.Admitted = u.Queue, u.Admitted
	}
	if t, ok := a.Feas.ReservationOf(uk); ok {
		at := time.Unix(t.Start, 0).UTC()
		v.ExpectedStart, v.ReservedNodes = &at, slices.Clone(t.Nodes)
	} else if at, ok := a.EstimatedStartOf(uk); ok {
		at = at.UTC()
		v.EstimatedStart = &at
	}
	return v
}

// keyStrings renders unit keys as the dump shows them ("pg:ns/name").
func keyStrings(keys []queue.Key) []string {
	if keys == nil {
		return nil
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}
