package quality

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/caldera-sched/caldera/test/quality/score"
)

// Why each eviction happened, from what the scheduler wrote while the run
// went on: its Events. CalderaReclaim writes one on each victim pod
// (score.ReasonReclaimed or score.ReasonPreempted, naming the pod it made
// room for), and so does upstream's preemption Executor, which carries out
// every plan ("Preempted by pod UID on node N", reason Preempted too, with
// the preemptor as the related object); admission evicts a pod past its
// annotated limit in the room of a reservation come due and says so
// (score.ReasonOverran: "ran Ns past its run-time limit ... into the
// reservation of pg:ns/name from T"); admission writes an Admitted Event on a group (or a pod, a
// group of one) admitted on lent room, saying so, and a NotAdmitted Event
// whose note ends "reserved from T on n0, n2" when a refused group holds a
// reservation. The runner reads them once the run is over.

// Event reasons admission writes (pkg/status).
const (
	reasonAdmitted    = "Admitted"
	reasonNotAdmitted = "NotAdmitted"
	// lentNote is in the note of an admission on lent room
	// (queue.Decision.Message).
	lentNote = "lent beyond its deserved share"
)

// schedEvent is what attribution reads of one Event.
type schedEvent struct {
	at     time.Time
	kind   string // of the object it is about: Pod or PodGroup
	object string // that object's name
	// related is the related object (namespace/name), if any: upstream's
	// eviction Event names the preemptor so.
	related string
	reason  string
	note    string
}

// victim is one evicted pod as the runner saw it.
type victim struct {
	pod  string
	unit string // its admission unit: the gang's PodGroup, or the pod itself
	node string // where it was bound; "" if it never was
	// bound is when it was bound (zero: never), at when it was deleted.
	bound, at time.Time
}

// attribution is what the Events say about one eviction.
type attribution struct {
	reason, preemptor          string
	lent                       bool
	backfilled, forReservation bool
}

// reservation is one interval during which a group held a reservation, as
// its NotAdmitted Events said: from the Event naming it until the group's
// next verdict (to zero: never superseded).
type reservation struct {
	unit     string
	from, to time.Time
	start    time.Time
	nodes    []string
}

var reservedRE = regexp.MustCompile(`reserved from (\S+) on (.+)$`)

// parseReservation reads "... reserved from T on n0, n2" at the end of a
// verdict.
func parseReservation(note string) (start time.Time, nodes []string, ok bool) {
	m := reservedRE.FindStringSubmatch(note)
	if m == nil {
		return time.Time{}, nil, false
	}
	start, err := time.Parse(time.RFC3339, m[1])
	if err != nil {
		return time.Time{}, nil, false
	}
	return start, strings.Split(m[2], ", "), true
}

// calderaNote reads CalderaReclaim's Event on a victim: "Reclaimed for
// ns/pod of queue ..." or "Preempted by ns/pod, a higher-priority group
// ...", its reason and the pod it made room for. Upstream's "Preempted by
// pod UID on node N" is not one.
func calderaNote(note string) (reason, preemptor string, ok bool) {
	f := strings.Fields(note)
	switch {
	case len(f) >= 4 && f[0] == score.ReasonReclaimed && f[1] == "for" && f[3] == "of":
		return score.ReasonReclaimed, f[2], true
	case len(f) >= 4 && f[0] == score.ReasonPreempted && f[1] == "by" && strings.HasSuffix(f[2], ",") && f[3] == "a":
		return score.ReasonPreempted, strings.TrimSuffix(f[2], ","), true
	}
	return "", "", false
}

var overranRE = regexp.MustCompile(`into the reservation of (\S+) from`)

// overranNote reads admission's Event on a pod evicted past its limit:
// the reserved group it made room for.
func overranNote(note string) (reserved string, ok bool) {
	m := overranRE.FindStringSubmatch(note)
	if m == nil {
		return "", false
	}
	return m[1], true
}

var jobIDRE = regexp.MustCompile(`job-(\d+)`)

// jobIDOf is the trace job a pod (namespace/name, or name) belongs to; -1
// if its name says none.
func jobIDOf(pod string) int {
	m := jobIDRE.FindStringSubmatch(pod)
	if m == nil {
		return -1
	}
	id, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return id
}

// reservations are the reservation intervals evs (sorted by time) show.
func reservations(evs []schedEvent) []reservation {
	var out []reservation
	open := map[string]int{} // unit -> index in out of its open interval
	last := map[string]string{}
	for _, e := range evs {
		if e.reason != reasonAdmitted && e.reason != reasonNotAdmitted {
			continue
		}
		if prev, ok := last[e.object]; ok && prev == e.reason+e.note {
			continue // the same verdict again (an Event series)
		}
		last[e.object] = e.reason + e.note
		if i, ok := open[e.object]; ok {
			out[i].to = e.at
			delete(open, e.object)
		}
		if e.reason != reasonNotAdmitted {
			continue
		}
		if start, nodes, ok := parseReservation(e.note); ok {
			open[e.object] = len(out)
			out = append(out, reservation{unit: e.object, from: e.at, start: start, nodes: nodes})
		}
	}
	return out
}

// attribute says, for each victim, what the Events evs (sorted by time)
// tell of its eviction: CalderaReclaim's reason, and the pod it made room
// for (from that Event, else from upstream's); whether its unit's last admission before the eviction was on lent
// room; and whether it had been bound on a node that another group's
// reservation, in force then, needed from a later time (backfill), and was
// evicted to make room for that group.
func attribute(evs []schedEvent, victims []victim) []attribution {
	res := reservations(evs)
	// By victim pod, the Events about its eviction: the scheduler's own
	// (CalderaReclaim's, or admission's "ran ... past its run-time
	// limit"), and upstream's, which relates the preemptor. A pod is
	// evicted once (a recreated pod has a new name), but an Event about
	// it can also be about another pod's eviction (admission writes one
	// on the reserved group, a pod when it is a group of one, naming the
	// victim first): only notes that start as the victim's own count,
	// the nearest to the eviction first.
	type cause struct {
		at                time.Time
		reason, preemptor string
	}
	own := map[string][]cause{}
	related := map[string]string{}
	admissions := map[string][]schedEvent{}
	for _, e := range evs {
		switch {
		case e.kind == "Pod" && e.reason == score.ReasonOverran:
			if reserved, ok := overranNote(e.note); ok && strings.HasPrefix(e.note, "ran ") {
				own[e.object] = append(own[e.object], cause{e.at, score.ReasonOverran, reserved})
			}
		case e.kind == "Pod" && (e.reason == score.ReasonReclaimed || e.reason == score.ReasonPreempted):
			if reason, pre, ok := calderaNote(e.note); ok {
				own[e.object] = append(own[e.object], cause{e.at, reason, pre})
			} else if _, seen := related[e.object]; !seen {
				related[e.object] = e.related
			}
		case e.reason == reasonAdmitted:
			admissions[e.object] = append(admissions[e.object], e)
		}
	}
	out := make([]attribution, len(victims))
	for i, v := range victims {
		a := &out[i]
		var best time.Duration = -1
		for _, c := range own[v.pod] {
			if d := c.at.Sub(v.at).Abs(); best < 0 || d < best {
				best, a.reason, a.preemptor = d, c.reason, c.preemptor
			}
		}
		if a.preemptor == "" {
			a.preemptor = related[v.pod]
		}
		for _, e := range admissions[v.unit] {
			if e.at.After(v.at) {
				break
			}
			a.lent = strings.Contains(e.note, lentNote)
		}
		if v.node == "" || v.bound.IsZero() {
			continue
		}
		for _, r := range res {
			if r.unit == v.unit || r.from.After(v.bound) || !r.to.IsZero() && !r.to.After(v.bound) ||
				!r.start.After(v.bound) || !slices.Contains(r.nodes, v.node) {
				continue
			}
			a.backfilled = true
			if a.preemptor != "" && jobIDOf(a.preemptor) == jobIDOf(r.unit) {
				a.forReservation = true
			}
		}
	}
	return out
}

// verdictLogs are, for each job in jobs, the admission Events about it
// (Admitted, NotAdmitted, and OverranRunLimit on the reserved group), in
// order, an Event repeated (a series) once: what it was told while it
// waited, and why its start moved.
func verdictLogs(evs []schedEvent, jobs map[int]bool) map[int][]schedEvent {
	out := map[int][]schedEvent{}
	last := map[string]string{}
	for _, e := range evs {
		if e.reason != reasonAdmitted && e.reason != reasonNotAdmitted && e.reason != score.ReasonOverran {
			continue
		}
		id := jobIDOf(e.object)
		if !jobs[id] || last[e.object] == e.reason+e.note {
			continue
		}
		last[e.object] = e.reason + e.note
		out[id] = append(out[id], e)
	}
	return out
}

// eventTimes are the instants an Event stands for: when it was first
// written, and for a series (the same Event again) its last observation.
func eventTimes(ev *eventsv1.Event) []time.Time {
	var first time.Time
	switch {
	case !ev.EventTime.IsZero():
		first = ev.EventTime.Time
	case !ev.DeprecatedFirstTimestamp.IsZero():
		first = ev.DeprecatedFirstTimestamp.Time
	default:
		first = ev.CreationTimestamp.Time
	}
	out := []time.Time{first}
	if ev.Series != nil && ev.Series.LastObservedTime.After(first) {
		out = append(out, ev.Series.LastObservedTime.Time)
	}
	return out
}

// schedEvents lists the Events about pods and PodGroups in namespaces,
// sorted by time.
func schedEvents(ctx context.Context, r *runner, namespaces []string) ([]schedEvent, error) {
	var out []schedEvent
	for _, ns := range namespaces {
		list, err := r.env.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			ev := &list.Items[i]
			if k := ev.Regarding.Kind; k != "Pod" && k != "PodGroup" {
				continue
			}
			related := ""
			if rel := ev.Related; rel != nil && rel.Name != "" {
				related = rel.Namespace + "/" + rel.Name
			}
			for _, at := range eventTimes(ev) {
				out = append(out, schedEvent{at: at, kind: ev.Regarding.Kind, object: ev.Regarding.Name, related: related, reason: ev.Reason, note: ev.Note})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b schedEvent) int { return a.at.Compare(b.at) })
	return out, nil
}

// disruptionOf is pod's DisruptionTarget condition, "reason: message".
func disruptionOf(pod *v1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			return c.Reason + ": " + c.Message
		}
	}
	return ""
}

// readEvents reads the scheduler's Events once the run is over: each
// logged eviction's cause, and the verdicts of each job given an ETA.
// r.mu must not be held.
func (r *runner) readEvents(ctx context.Context) error {
	r.mu.Lock()
	victims := slices.Clone(r.victims)
	withETA := map[int]bool{}
	for _, js := range r.jobs {
		if !js.firstETA.IsZero() {
			withETA[js.job.ID] = true
		}
	}
	r.mu.Unlock()
	if len(victims) == 0 && len(withETA) == 0 {
		return nil
	}
	var namespaces []string
	for _, q := range r.tr.Params.Queues {
		namespaces = append(namespaces, q.Name)
	}
	evs, err := schedEvents(ctx, r, namespaces)
	if err != nil {
		return err
	}
	got := attribute(evs, victims)
	verdicts := verdictLogs(evs, withETA)
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, vs := range verdicts {
		for _, v := range vs {
			r.jobs[id].verdicts = append(r.jobs[id].verdicts, score.Verdict{T: r.traceSeconds(v.at), Reason: v.reason, Note: v.note})
		}
	}
	for i, a := range got {
		e := &r.evictionLog[i]
		e.Reason, e.Preemptor, e.PreemptorJob = a.reason, a.preemptor, jobIDOf(a.preemptor)
		e.Lent, e.Backfilled, e.ForReservation = a.lent, a.backfilled, a.forReservation
	}
	return nil
}
