package kubectlcaldera

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/feed"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// The live plan is read off the PodGroups' expected starts, earliest first;
// the job's own PodGroups and unreadable starts are not seeded, and the
// report says what the pass made of each.
func TestLiveReservations(t *testing.T) {
	pg := func(name string, ann map[string]string) *v1alpha1.PodGroup {
		return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: name, Annotations: ann}}
	}
	start := func(at string) map[string]string { return map[string]string{qapi.ExpectedStartAnnotation: at} }
	late := start("2030-01-01T00:10:00Z")
	late[qapi.VerdictAnnotation] = "queue low: cpu request 8 exceeds remaining capability 4; reserved from 2030-01-01T00:10:00Z on n0, n2"
	l := &feed.Listed{PodGroups: []*v1alpha1.PodGroup{
		pg("late", late), pg("none", nil), pg("early", start("2030-01-01T00:05:00Z")),
		pg("bad", start("soon")), pg("gone", start("2030-01-01T00:07:00Z")), pg("mine", start("2030-01-01T00:01:00Z")),
	}}
	job := jobObjects{podGroups: []*v1alpha1.PodGroup{{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "mine"}}}}
	seeds, live := liveReservations(l, job)
	var order []string
	for _, s := range seeds {
		order = append(order, s.Group.Name)
	}
	if !slices.Equal(order, []string{"early", "gone", "late"}) {
		t.Errorf("seeds in order %v, want early, gone, late", order)
	}
	at := time.Date(2030, 1, 1, 0, 10, 0, 0, time.UTC)
	settleLive(live, map[gangbook.GroupKey]string{{Namespace: "ml", Name: "gone"}: admission.SeedNoUnit},
		[]admission.ReservationView{{Unit: "pg:ml/late", Start: at, Nodes: []string{"n2", "n0"}}})
	var out bytes.Buffer
	if err := printLive(&out, live); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"pg:ml/late   2030-01-01T00:10:00Z on n0, n2  yes       from 2030-01-01T00:10:00Z on n2, n0",
		"pg:ml/early  2030-01-01T00:05:00Z            yes       not kept",
		"pg:ml/gone   2030-01-01T00:07:00Z            no        left out: " + admission.SeedNoUnit,
		"pg:ml/bad    -                               no        left out: its expected start \"soon\" is no RFC 3339 time",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("what-if's report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "mine") || strings.Contains(out.String(), "none") {
		t.Errorf("what-if's report names the job's own PodGroup or one without a start:\n%s", out.String())
	}
}
