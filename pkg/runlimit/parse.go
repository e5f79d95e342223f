package runlimit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Annotation declares a job's run-time limit in whole seconds ("3600"),
// for workloads that can set neither a pod's nor a Job's
// activeDeadlineSeconds: on a pod (through its template) or on its
// PodGroup. Nothing kills a pod that overruns it; docs/runlimits.md says
// what happens then.
const Annotation = "scheduling.caldera.dev/max-run-seconds"

// MaxSeconds is the largest limit taken: 2^31-1 s, about 68 years, the
// bound the API server puts on a pod's activeDeadlineSeconds. A larger
// annotation is a typo or an attempt to say "unbounded" (leave it out for
// that), and the bound keeps every start+limit far from overflow.
const MaxSeconds int64 = math.MaxInt32

// EventReason is the reason of the Warning Event a caller records for an
// InvalidError, on the object that carries the annotation.
const EventReason = "InvalidRunLimit"

// maxQuoted bounds how much of a bad value a message repeats: an
// annotation may be up to 256 KiB, an Event message is cut at 1 KiB.
const maxQuoted = 64

// problem is what is wrong with an annotation's value.
type problem uint8

const (
	problemEmpty       problem = iota + 1 // ""
	problemNotInteger                     // "abc", "1.5", " 60"
	problemDuration                       // "1h": Go duration syntax, seconds suggested
	problemNotPositive                    // "0", "-5"
	problemTooLarge                       // over MaxSeconds, overflow included
)

// InvalidError is an annotation whose value is not a limit. The caller
// ignores the annotation (as if absent: the other sources still count)
// and may record Error() as a Warning Event (EventReason) on the object
// that carries it; the message names the key, the value, what is wrong and
// what to write instead.
type InvalidError struct {
	// Source is PodAnnotation or GroupAnnotation from Of; None from Parse.
	Source Source
	// Value is the annotation's value as found.
	Value string

	problem problem
	suggest int64 // for problemDuration: the duration in whole seconds
}

// Error is the Event's message, for example:
//
//	PodGroup annotation scheduling.caldera.dev/max-run-seconds="2h": a
//	duration, not a whole number of seconds: write "7200"; ignored, as if
//	absent
func (e *InvalidError) Error() string {
	where := "annotation "
	switch e.Source {
	case PodAnnotation:
		where = "pod annotation "
	case GroupAnnotation:
		where = "PodGroup annotation "
	}
	v := e.Value
	if len(v) > maxQuoted {
		v = v[:maxQuoted] + "..."
	}
	return fmt.Sprintf("%s%s=%q: %s; ignored, as if absent", where, Annotation, v, e.detail())
}

// detail says what is wrong and how to write it instead.
func (e *InvalidError) detail() string {
	switch e.problem {
	case problemEmpty:
		return `empty: give the limit in whole seconds, such as "3600"`
	case problemDuration:
		return fmt.Sprintf(`a duration, not a whole number of seconds: write "%d"`, e.suggest)
	case problemNotPositive:
		return "not positive: a limit is at least 1 second (leave the annotation out for no limit)"
	case problemTooLarge:
		return fmt.Sprintf("over the maximum of %d seconds (about 68 years; leave the annotation out for no limit)", MaxSeconds)
	default:
		return `not a whole number of seconds, such as "3600"`
	}
}

// Parse reads an Annotation value: a whole number of seconds in [1,
// MaxSeconds], in strconv.ParseInt's base-10 syntax (so "+60" and "0060"
// are 60). Anything else is 0 and an *InvalidError: Parse never returns a
// limit it could not read, nor a non-positive one. A Go duration such as
// "2h" is refused too, since the key says seconds and a unit the reader
// must guess would make two spellings of one limit, but its message
// suggests the number to write.
func Parse(value string) (int64, error) {
	n, err := strconv.ParseInt(value, 10, 64)
	switch {
	case err == nil && n <= 0:
		return 0, &InvalidError{Value: value, problem: problemNotPositive}
	case err == nil && n > MaxSeconds:
		return 0, &InvalidError{Value: value, problem: problemTooLarge}
	case err == nil:
		return n, nil
	case value == "":
		return 0, &InvalidError{Value: value, problem: problemEmpty}
	case errors.Is(err, strconv.ErrRange):
		// Out of int64's range: a sign says which end.
		if value[0] == '-' {
			return 0, &InvalidError{Value: value, problem: problemNotPositive}
		}
		return 0, &InvalidError{Value: value, problem: problemTooLarge}
	}
	if d, derr := time.ParseDuration(value); derr == nil && d > 0 && d <= time.Duration(MaxSeconds)*time.Second {
		s := int64((d + time.Second - 1) / time.Second) // rounded up: a limit must not shrink
		return 0, &InvalidError{Value: value, problem: problemDuration, suggest: s}
	}
	return 0, &InvalidError{Value: value, problem: problemNotInteger}
}

// annotated reads the Annotation from annotations: its limit and whether
// it is set and valid; an invalid value is an *InvalidError naming src.
func annotated(annotations map[string]string, src Source) (int64, bool, error) {
	v, ok := annotations[Annotation]
	if !ok {
		return 0, false, nil
	}
	n, err := Parse(v)
	if err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) {
			ie.Source = src
		}
		return 0, false, err
	}
	return n, true, nil
}
