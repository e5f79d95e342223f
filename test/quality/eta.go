package quality

// What the scheduler tells a waiting job about its start: the expected
// start of a reservation, and an estimated one, recorded the first time
// each is seen, to be scored against the job's real start.

import (
	"fmt"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	pgapi "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// onGroup records the first expected start, and the first estimated
// start, written on a gang's PodGroup while the gang waits.
func (r *runner) onGroup(pg *pgapi.PodGroup) {
	for _, key := range []string{qapi.ExpectedStartAnnotation, qapi.EstimatedStartAnnotation} {
		v, ok := pg.Annotations[key]
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			r.fail(fmt.Errorf("PodGroup %s/%s: %s %q: %w", pg.Namespace, pg.Name, key, v, err))
			return
		}
		r.mu.Lock()
		js := r.groups[pg.Namespace+"/"+pg.Name]
		if key == qapi.ExpectedStartAnnotation {
			r.noteETA(js, at)
		} else if js != nil && js.firstEstimate.IsZero() && js.firstStart.IsZero() {
			js.firstEstimate = at
		}
		r.mu.Unlock()
	}
}

// onEvent records the first expected start a single pod is told, in its
// NotAdmitted verdict.
func (r *runner) onEvent(ev *eventsv1.Event) {
	if ev.Reason != reasonNotAdmitted || ev.Regarding.Kind != "Pod" {
		return
	}
	at, _, ok := parseReservation(ev.Note)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ps := r.pods[ev.Regarding.Namespace+"/"+ev.Regarding.Name]; ps != nil && ps.job.job.Size == 1 {
		r.noteETA(ps.job, at)
	}
}

// noteETA records at as js's first expected start, unless it had one or
// has started; r.mu held.
func (r *runner) noteETA(js *jobState, at time.Time) {
	if js == nil || !js.firstETA.IsZero() || !js.firstStart.IsZero() {
		return
	}
	js.firstETA = at
	js.predLimited = r.predecessorsLimited(js)
}

// predecessorsLimited says whether every job other than js holding room
// now (a pod bound and not finished) declared a limit; r.mu held. O(pods).
func (r *runner) predecessorsLimited(js *jobState) bool {
	for _, o := range r.jobs {
		if o == js || o.job.Limit > 0 {
			continue
		}
		for _, ps := range o.live {
			if !ps.boundAt.IsZero() && !ps.succeeded {
				return false
			}
		}
	}
	return true
}
