package runlimit

import (
	"errors"
	"math"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Unbounded is the end, or the hold, of a job without a limit. It equals
// pkg/plan's Unbounded (a test holds them equal), so EndOf's answer is an
// Alloc.End and Hold's a Gang.Limit as they are; this package does not
// import pkg/plan, whose model needs nothing of Kubernetes.
const Unbounded int64 = math.MaxInt64

// Source says where a limit was declared. The constants are in the order
// Of breaks ties in: a limit someone enforces before a promise, the pod's
// own before its group's.
type Source uint8

const (
	// None: no limit was declared; the job is unbounded.
	None Source = iota
	// PodDeadline is the pod's spec.activeDeadlineSeconds: the kubelet
	// kills the pod that long after its status.startTime.
	PodDeadline
	// PodAnnotation is the Annotation on the pod (from its template).
	PodAnnotation
	// JobDeadline is the owning Job's spec.activeDeadlineSeconds, which is
	// not on its pods: the Job controller fails the Job, and deletes its
	// pods, that long after the Job's start.
	JobDeadline
	// GroupAnnotation is the Annotation on the pod's PodGroup.
	GroupAnnotation
)

// String names the source as docs, dumps and messages show it.
func (s Source) String() string {
	switch s {
	case None:
		return "none"
	case PodDeadline:
		return "pod activeDeadlineSeconds"
	case PodAnnotation:
		return "pod annotation"
	case JobDeadline:
		return "Job activeDeadlineSeconds"
	case GroupAnnotation:
		return "PodGroup annotation"
	}
	return "Source(" + strconv.Itoa(int(s)) + ")"
}

// Limit is a job's declared run-time limit, counted from its pod's start.
// The zero Limit is unbounded.
type Limit struct {
	// Seconds is the declared limit (0 when unbounded; a pod's deadline
	// may also be lowered to 0, which means "stop now").
	Seconds int64
	// Grace is how much longer the pod may hold its room while it is
	// stopped: its terminationGracePeriodSeconds for the two deadlines,
	// whose enforcers kill it with that grace; 0 for an annotation, a
	// promise to have exited by Seconds.
	Grace int64
	// Source is where the limit was declared.
	Source Source
}

// Bounded reports whether l is a limit at all.
func (l Limit) Bounded() bool { return l.Source != None }

// Hold is how long after its start the job may hold its room at most:
// Seconds+Grace, Unbounded without a limit. It is pkg/plan's Gang.Limit.
func (l Limit) Hold() int64 {
	if !l.Bounded() {
		return Unbounded
	}
	return l.Seconds + l.Grace
}

// String renders l as "3600s (pod annotation)", "600s+30s grace (pod
// activeDeadlineSeconds)" or "unbounded".
func (l Limit) String() string {
	if !l.Bounded() {
		return "unbounded"
	}
	s := strconv.FormatInt(l.Seconds, 10) + "s"
	if l.Grace > 0 {
		s += "+" + strconv.FormatInt(l.Grace, 10) + "s grace"
	}
	return s + " (" + l.Source.String() + ")"
}

// Of returns the pod's run-time limit: the smallest Hold of the pod's
// spec.activeDeadlineSeconds, the Annotation on the pod, and the
// Annotation in group (the annotations of the pod's PodGroup; nil when it
// has none). The smallest, because each is a promise that the job has
// ended by then, so the earliest of them is one too; ties go to the
// earlier Source. A nil pod gives the group's limit alone (a gang whose
// members do not exist yet).
//
// An invalid annotation is ignored and reported: the error is nil or joins
// one *InvalidError per invalid annotation (Invalid lists them), and the
// Limit is the one the valid sources give. Of is OfJob without a Job.
func Of(pod *v1.Pod, group map[string]string) (Limit, error) {
	return OfJob(pod, group, nil)
}

// OfJob is Of with the owning Job's spec.activeDeadlineSeconds
// (jobDeadline, nil without a Job or a deadline) as one more source, for
// the caller that reads the pod's Job. The Job controller counts it from
// the Job's start, which precedes the pod's, so taking it from the pod's
// start is a bound that is late, never early. Deadlines the API server
// would not take from a pod (negative, or over MaxSeconds: a Job may say
// 10^12) are no promise within any plan's horizon and are ignored.
func OfJob(pod *v1.Pod, group map[string]string, jobDeadline *int64) (Limit, error) {
	var best Limit
	consider := func(c Limit) {
		if !best.Bounded() || c.Hold() < best.Hold() {
			best = c
		}
	}
	var errs []error
	var grace int64 = v1.DefaultTerminationGracePeriodSeconds
	if pod != nil {
		grace = graceOf(pod)
		if d, ok := apiSeconds(pod.Spec.ActiveDeadlineSeconds); ok {
			consider(Limit{Seconds: d, Grace: grace, Source: PodDeadline})
		}
		if n, ok, err := annotated(pod.Annotations, PodAnnotation); ok {
			consider(Limit{Seconds: n, Source: PodAnnotation})
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	if d, ok := apiSeconds(jobDeadline); ok {
		consider(Limit{Seconds: d, Grace: grace, Source: JobDeadline})
	}
	if n, ok, err := annotated(group, GroupAnnotation); ok {
		consider(Limit{Seconds: n, Source: GroupAnnotation})
	} else if err != nil {
		errs = append(errs, err)
	}
	return best, errors.Join(errs...)
}

// Invalid returns the *InvalidErrors in an error from Of or OfJob, in
// source order (pod, then group), so the caller records each on the object
// that carries it; nil for nil.
func Invalid(err error) []*InvalidError {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []*InvalidError
	for _, e := range errs {
		var ie *InvalidError
		if errors.As(e, &ie) {
			out = append(out, ie)
		}
	}
	return out
}

// Gang is the limit of a gang whose members have these limits: the one
// with the largest Hold, since the gang's room is all back only when its
// last member has ended; unbounded when any member is, or when there are
// none.
func Gang(members []Limit) Limit {
	var out Limit
	for i, m := range members {
		if !m.Bounded() {
			return Limit{}
		}
		if i == 0 || m.Hold() > out.Hold() {
			out = m
		}
	}
	return out
}

// EndOf is when a pod that started at start and has limit l gives its room
// back at the latest, in Unix seconds (pkg/plan's clock): start rounded up
// to a whole second, plus l.Hold(); Unbounded without a limit. start is
// the pod's status.startTime, which the kubelet counts from; a pod bound
// but not started yet has none, and the caller passes when it saw the pod
// bound (the end then moves later once startTime is set). The kubelet also
// needs about a second to notice an expired deadline: a pod past its end
// is Overdue and Expected at now+1, which covers it.
func EndOf(start time.Time, l Limit) int64 {
	if !l.Bounded() {
		return Unbounded
	}
	s := start.Unix()
	if start.Nanosecond() > 0 {
		s++ // the kubelet kills at start+limit exactly: round the start up
	}
	h := l.Hold()
	if s > Unbounded-1-h {
		return Unbounded - 1 // a start near the end of time: still bounded
	}
	return s + h
}

// Overdue reports whether a pod with this end (from EndOf) has reached it
// at now and still runs: its room is still held, and an annotation's
// promise is broken (nothing kills it).
func Overdue(end, now int64) bool { return end != Unbounded && end <= now }

// Expected is when a plan at now expects room with this end back: the end
// itself, or now+1 for a pod past it, which still holds its room and may
// leave at any moment (pkg/plan's model: it is never counted as free now).
// Unbounded stays Unbounded.
func Expected(end, now int64) int64 {
	if end == Unbounded {
		return Unbounded
	}
	return max(end, now+1)
}

// apiSeconds reads a deadline from the API: present and within [0,
// MaxSeconds]. The API server takes 0 on a pod's update (it means "stop
// now") and any non-negative value on a Job.
func apiSeconds(p *int64) (int64, bool) {
	if p == nil || *p < 0 || *p > MaxSeconds {
		return 0, false
	}
	return *p, true
}

// graceOf is the pod's termination grace period as its killer applies it:
// the API's default when unset, clamped to [0, MaxSeconds].
func graceOf(pod *v1.Pod) int64 {
	g := pod.Spec.TerminationGracePeriodSeconds
	if g == nil {
		return v1.DefaultTerminationGracePeriodSeconds
	}
	return min(max(*g, 0), MaxSeconds)
}
