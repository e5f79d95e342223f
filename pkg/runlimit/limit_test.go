package runlimit

import (
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/caldera-sched/caldera/pkg/plan"
)

func i64(v int64) *int64 { return &v }

// pod builds a pod with an optional activeDeadlineSeconds, grace period and
// annotation value (ann "-" for none).
func pod(deadline, grace *int64, ann string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	p.Spec.ActiveDeadlineSeconds = deadline
	p.Spec.TerminationGracePeriodSeconds = grace
	if ann != "-" {
		p.Annotations = map[string]string{Annotation: ann}
	}
	return p
}

func group(ann string) map[string]string { return map[string]string{Annotation: ann} }

// ofCase is one rule of OfJob: a pod, its group's annotations and its
// Job's deadline, and the limit and invalid annotations they give.
type ofCase struct {
	name    string
	pod     *v1.Pod
	group   map[string]string
	job     *int64
	want    Limit
	invalid []Source // the sources of the InvalidErrors, in order
}

var ofCases = []ofCase{
	{name: "nothing declared: unbounded", pod: pod(nil, nil, "-")},
	{name: "nil pod, no group", pod: nil},
	{name: "pod deadline, default grace", pod: pod(i64(600), nil, "-"),
		want: Limit{Seconds: 600, Grace: 30, Source: PodDeadline}},
	{name: "pod deadline, own grace", pod: pod(i64(600), i64(5), "-"),
		want: Limit{Seconds: 600, Grace: 5, Source: PodDeadline}},
	{name: "pod deadline, negative grace is none", pod: pod(i64(600), i64(-3), "-"),
		want: Limit{Seconds: 600, Source: PodDeadline}},
	{name: "pod deadline lowered to 0: stop now", pod: pod(i64(0), i64(10), "-"),
		want: Limit{Seconds: 0, Grace: 10, Source: PodDeadline}},
	{name: "pod annotation", pod: pod(nil, nil, "900"),
		want: Limit{Seconds: 900, Source: PodAnnotation}},
	{name: "group annotation", pod: pod(nil, nil, "-"), group: group("1200"),
		want: Limit{Seconds: 1200, Source: GroupAnnotation}},
	{name: "group annotation, nil pod", pod: nil, group: group("1200"),
		want: Limit{Seconds: 1200, Source: GroupAnnotation}},
	{name: "Job deadline", pod: pod(nil, i64(7), "-"), job: i64(3000),
		want: Limit{Seconds: 3000, Grace: 7, Source: JobDeadline}},
	{name: "Job deadline, nil pod: default grace", pod: nil, job: i64(3000),
		want: Limit{Seconds: 3000, Grace: 30, Source: JobDeadline}},
	{name: "Job deadline of 0 counts", pod: pod(nil, nil, "-"), job: i64(0),
		want: Limit{Seconds: 0, Grace: 30, Source: JobDeadline}},
	{name: "Job deadline over MaxSeconds is no promise", pod: pod(nil, nil, "-"), job: i64(1e12)},
	{name: "negative Job deadline is ignored", pod: pod(nil, nil, "-"), job: i64(-1)},
	{name: "smallest hold wins: annotation under deadline+grace", pod: pod(i64(600), nil, "620"),
		want: Limit{Seconds: 620, Source: PodAnnotation}},
	{name: "smallest hold wins: deadline+grace under annotation", pod: pod(i64(600), nil, "700"),
		want: Limit{Seconds: 600, Grace: 30, Source: PodDeadline}},
	{name: "smallest wins: group under pod", pod: pod(nil, nil, "900"), group: group("300"),
		want: Limit{Seconds: 300, Source: GroupAnnotation}},
	{name: "smallest wins: Job under all", pod: pod(i64(900), i64(0), "800"), group: group("700"), job: i64(100),
		want: Limit{Seconds: 100, Source: JobDeadline}},
	{name: "tie: the deadline before the annotation", pod: pod(i64(570), nil, "600"),
		want: Limit{Seconds: 570, Grace: 30, Source: PodDeadline}},
	{name: "tie: the pod before its group", pod: pod(nil, nil, "600"), group: group("600"),
		want: Limit{Seconds: 600, Source: PodAnnotation}},
	{name: "invalid pod annotation: the group's holds", pod: pod(nil, nil, "1h"), group: group("1200"),
		want: Limit{Seconds: 1200, Source: GroupAnnotation}, invalid: []Source{PodAnnotation}},
	{name: "invalid annotation beside a deadline", pod: pod(i64(60), nil, "0"),
		want: Limit{Seconds: 60, Grace: 30, Source: PodDeadline}, invalid: []Source{PodAnnotation}},
	{name: "both annotations invalid: unbounded, two errors", pod: pod(nil, nil, "abc"), group: group("-1"),
		invalid: []Source{PodAnnotation, GroupAnnotation}},
	{name: "invalid group annotation under a valid pod one", pod: pod(nil, nil, "60"), group: group("99999999999"),
		want: Limit{Seconds: 60, Source: PodAnnotation}, invalid: []Source{GroupAnnotation}},
}

func TestOf(t *testing.T) {
	for _, tc := range ofCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OfJob(tc.pod, tc.group, tc.job)
			if got != tc.want {
				t.Errorf("limit = %v %+v, want %v %+v", got, got, tc.want, tc.want)
			}
			inv := Invalid(err)
			if len(inv) != len(tc.invalid) || (err == nil) != (len(tc.invalid) == 0) {
				t.Fatalf("errors = %v, want sources %v", err, tc.invalid)
			}
			for i, ie := range inv {
				if ie.Source != tc.invalid[i] {
					t.Errorf("error %d from %v, want %v", i, ie.Source, tc.invalid[i])
				}
				if !strings.HasPrefix(ie.Error(), tc.invalid[i].String()+" "+Annotation+"=") {
					t.Errorf("error %d: %q does not say where", i, ie.Error())
				}
			}
			if tc.job == nil {
				if g2, err2 := Of(tc.pod, tc.group); g2 != got || (err2 == nil) != (err == nil) || err != nil && err2.Error() != err.Error() {
					t.Errorf("Of = %v, %v; OfJob(nil) = %v, %v", g2, err2, got, err)
				}
			}
		})
	}
}

func TestInvalidUnwrapped(t *testing.T) {
	if Invalid(nil) != nil {
		t.Error("Invalid(nil) is not nil")
	}
	_, err := Parse("x")
	if got := Invalid(err); len(got) != 1 || got[0].Value != "x" {
		t.Errorf("Invalid(one error) = %v", got)
	}
	if got := Invalid(errors.New("other")); got != nil {
		t.Errorf("Invalid(other error) = %v", got)
	}
}

func TestLimitHoldAndString(t *testing.T) {
	for _, tc := range []struct {
		l    Limit
		hold int64
		str  string
	}{
		{Limit{}, Unbounded, "unbounded"},
		{Limit{Seconds: 600, Grace: 30, Source: PodDeadline}, 630, "600s+30s grace (pod activeDeadlineSeconds)"},
		{Limit{Seconds: 900, Source: GroupAnnotation}, 900, "900s (PodGroup annotation)"},
		{Limit{Seconds: 5, Source: JobDeadline}, 5, "5s (Job activeDeadlineSeconds)"},
	} {
		if h := tc.l.Hold(); h != tc.hold {
			t.Errorf("%+v: Hold = %d, want %d", tc.l, h, tc.hold)
		}
		if s := tc.l.String(); s != tc.str {
			t.Errorf("%+v: String = %q, want %q", tc.l, s, tc.str)
		}
	}
	if s := Source(9).String(); s != "Source(9)" {
		t.Errorf("unknown source: %q", s)
	}
}

func TestUnboundedIsPlans(t *testing.T) {
	if Unbounded != plan.Unbounded {
		t.Fatalf("runlimit.Unbounded %d != plan.Unbounded %d", Unbounded, plan.Unbounded)
	}
}

func TestGang(t *testing.T) {
	a := Limit{Seconds: 600, Grace: 30, Source: PodDeadline}
	b := Limit{Seconds: 700, Source: PodAnnotation}
	for _, tc := range []struct {
		name    string
		members []Limit
		want    Limit
	}{
		{"no members: unbounded", nil, Limit{}},
		{"one member", []Limit{a}, a},
		{"the longest hold", []Limit{a, b, a}, b},
		{"deadline+grace beats a shorter Seconds", []Limit{{Seconds: 620, Source: PodAnnotation}, a}, a},
		{"one unbounded member: unbounded", []Limit{a, {}, b}, Limit{}},
	} {
		if got := Gang(tc.members); got != tc.want {
			t.Errorf("%s: Gang = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEndOf(t *testing.T) {
	start := time.Unix(1_000, 0)
	l := Limit{Seconds: 600, Grace: 30, Source: PodDeadline}
	for _, tc := range []struct {
		name  string
		start time.Time
		l     Limit
		want  int64
	}{
		{"unbounded", start, Limit{}, Unbounded},
		{"start + seconds + grace", start, l, 1_630},
		{"annotation: no grace", start, Limit{Seconds: 600, Source: PodAnnotation}, 1_600},
		{"a start within a second rounds up", start.Add(time.Millisecond), l, 1_631},
		{"deadline 0: the grace only", start, Limit{Grace: 30, Source: PodDeadline}, 1_030},
		{"the end of time saturates, still bounded", time.Unix(Unbounded-10, 0), l, Unbounded - 1},
	} {
		if got := EndOf(tc.start, tc.l); got != tc.want {
			t.Errorf("%s: EndOf = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestExpectedAndOverdue(t *testing.T) {
	const now = 5_000
	for _, tc := range []struct {
		name     string
		end      int64
		expected int64
		overdue  bool
	}{
		{"ends later: its end", 6_000, 6_000, false},
		{"ends right after now", now + 1, now + 1, false},
		{"at its end now: still holds room", now, now + 1, true},
		{"past its limit: expected at now+1", 1_000, now + 1, true},
		{"unbounded stays unbounded", Unbounded, Unbounded, false},
	} {
		if got := Expected(tc.end, now); got != tc.expected {
			t.Errorf("%s: Expected = %d, want %d", tc.name, got, tc.expected)
		}
		if got := Overdue(tc.end, now); got != tc.overdue {
			t.Errorf("%s: Overdue = %v, want %v", tc.name, got, tc.overdue)
		}
	}
}
