package admission

import (
	"cmp"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/status"
)

// admissionWrites is what admission owes the status writer, kept as sets
// the writer pulls: a verdict per unit (the last one decided), a release
// per gang sent back to pending, a nomination to clear per pod. A set
// cannot overflow, so nothing is lost when the writer is slow, and the
// writer always writes the present state, never a queue of past ones.
// Guarded by Cache.mu.
type admissionWrites struct {
	Verdicts map[queue.Key]verdictNote
	// seq numbers the verdicts as noted: the writer writes them (and so
	// posts their Events) in the order decided.
	seq      uint64
	releases map[queue.Key]releaseNote
	clears   map[types.UID]*v1.Pod
}

// verdictNote is a unit's admission decision as last noted.
type verdictNote struct {
	seq      uint64
	admitted bool
	check    queue.Check
	msg      string
}

// releaseNote names the object of a gang whose admission was withdrawn.
type releaseNote struct {
	key    types.NamespacedName
	source groupspec.Source
}

// verdict notes unit key's decision, replacing any not yet written. An
// admission supersedes a release not yet written: it writes the admitted
// mark again anyway.
func (w *admissionWrites) verdict(key queue.Key, admitted bool, check queue.Check, msg string) {
	if w.Verdicts == nil {
		w.Verdicts = map[queue.Key]verdictNote{}
	}
	w.seq++
	w.Verdicts[key] = verdictNote{seq: w.seq, admitted: admitted, check: check, msg: msg}
	if admitted {
		delete(w.releases, key)
	}
}

// release notes that gang unit key, named key, was sent back to pending:
// its admitted mark is to be removed.
func (w *admissionWrites) release(unit queue.Key, key types.NamespacedName, src groupspec.Source) {
	if w.releases == nil {
		w.releases = map[queue.Key]releaseNote{}
	}
	w.releases[unit] = releaseNote{key: key, source: src}
}

// clearNomination notes that pod's nominated node is to be removed.
func (w *admissionWrites) clearNomination(pod *v1.Pod) {
	if w.clears == nil {
		w.clears = map[types.UID]*v1.Pod{}
	}
	w.clears[pod.UID] = pod
}

// forgetUnit drops what is owed for a unit that is gone: on a replica
// that does not hold the Lease nobody pulls, and the sets must stay as
// small as the live units.
func (w *admissionWrites) forgetUnit(key queue.Key) {
	delete(w.Verdicts, key)
	delete(w.releases, key)
}

// forgetPod drops the nomination to clear of a pod that no longer names
// one, or is gone.
func (w *admissionWrites) forgetPod(uid types.UID) {
	delete(w.clears, uid)
}

// TakeAdmissionWritesLocked hands out and forgets what admission owes the
// writer: releases first, so that a gang released and refused since has
// its mark removed before its refusal is written. A verdict is built from
// the unit as it is now (its waiting pods included); a unit gone since has
// nothing left to tell. O(k log k) for the k units noted since the last call.
func (a *State) TakeAdmissionWritesLocked() []status.Admission {
	w := &a.Writes
	out := make([]status.Admission, 0, len(w.releases)+len(w.Verdicts)+len(w.clears))
	for _, r := range w.releases {
		k := r.key
		out = append(out, status.Admission{PodGroup: &k, Dialect: r.source.Dialect, UID: types.UID(r.source.UID), Unadmit: true})
	}
	keys := slices.Collect(maps.Keys(w.Verdicts))
	slices.SortFunc(keys, func(a, b queue.Key) int { return cmp.Compare(w.Verdicts[a].seq, w.Verdicts[b].seq) })
	for _, key := range keys {
		if wr, ok := a.admissionWriteLocked(key, w.Verdicts[key]); ok {
			out = append(out, wr)
		}
	}
	for _, pod := range w.clears {
		out = append(out, status.Admission{ClearNomination: true, Pod: pod})
	}
	clear(w.releases)
	clear(w.Verdicts)
	clear(w.clears)
	return out
}

// admissionWriteLocked is the write for unit key's noted verdict, and false
// when the unit, or its gang's object, is gone.
func (a *State) admissionWriteLocked(key queue.Key, n verdictNote) (status.Admission, bool) {
	u := a.Units[key]
	if u == nil || u.Gang != nil && u.Gang.Obj == nil {
		return status.Admission{}, false
	}
	w := status.Admission{Admitted: n.admitted, Check: n.check, Message: n.msg, Pod: u.Pod, AwaitingRoom: !n.admitted && u.WaitsForRoom()}
	if t, ok := a.Feas.ReservationOf(key); ok && !n.admitted {
		at := time.Unix(t.Start, 0)
		w.ExpectedStart = &at
	} else if at, ok := a.EstimatedStartOf(key); ok && !n.admitted {
		w.EstimatedStart = &at
	}
	if g := u.Gang; g != nil {
		k := g.Key.Named()
		w.PodGroup, w.Dialect, w.UID, w.Profile = &k, g.Obj.Source.Dialect, types.UID(g.Obj.Source.UID), g.ProfileLocked()
		w.Waiting = g.WaitingPodsLocked()
	} else if u.Pod.Spec.NodeName == "" {
		w.Waiting = []*v1.Pod{u.Pod}
	}
	return w, true
}
