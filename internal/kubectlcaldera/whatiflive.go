package kubectlcaldera

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/feed"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// LiveReservation is one reservation of the live scheduler's plan (a
// PodGroup's expected start) and what what-if's pass made of it.
type LiveReservation struct {
	// Unit is the reserved gang, pg:NAMESPACE/NAME.
	Unit string `json:"unit"`
	// LiveStart and LiveNodes are the reservation as the scheduler
	// published it: the PodGroup's expected start, and the nodes its
	// verdict names.
	LiveStart time.Time `json:"liveStart"`
	LiveNodes []string  `json:"liveNodes,omitempty"`
	// Honoured: the pass planned it first, before any queue's turn.
	Honoured bool `json:"honoured"`
	// Skipped says why it was not, when it was not.
	Skipped string `json:"skipped,omitempty"`
	// Start and Nodes are the reservation the pass kept for the unit (nil
	// when it kept none: the unit was admitted, or refused for something
	// room does not cure).
	Start *time.Time `json:"start,omitempty"`
	Nodes []string   `json:"nodes,omitempty"`
}

// liveReservations reads the live plan's reservations off the listed
// PodGroups, the job's own left out, ordered by expected start (then by
// name): the order the scheduler's pass made them in, as near as the
// annotations tell. A start that is no RFC 3339 time is reported, not
// seeded.
func liveReservations(l *feed.Listed, job jobObjects) ([]admission.ReservationSeed, []LiveReservation) {
	own := map[gangbook.GroupKey]bool{}
	for _, pg := range job.podGroups {
		own[gangbook.GroupKey{Namespace: pg.Namespace, Name: pg.Name}] = true
	}
	var seeds []admission.ReservationSeed
	var live []LiveReservation
	for _, pg := range l.PodGroups {
		v, ok := pg.Annotations[qapi.ExpectedStartAnnotation]
		key := gangbook.GroupKey{Namespace: pg.Namespace, Name: pg.Name}
		if !ok || own[key] {
			continue
		}
		lr := LiveReservation{Unit: "pg:" + key.String(), LiveNodes: verdictNodes(pg.Annotations[qapi.VerdictAnnotation])}
		at, err := time.Parse(time.RFC3339, v)
		if err != nil {
			lr.Skipped = fmt.Sprintf("its expected start %q is no RFC 3339 time", v)
		} else {
			lr.LiveStart = at.UTC()
			seeds = append(seeds, admission.ReservationSeed{Group: key, Start: at})
		}
		live = append(live, lr)
	}
	slices.SortFunc(seeds, func(a, b admission.ReservationSeed) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.Group.String(), b.Group.String())
	})
	slices.SortFunc(live, func(a, b LiveReservation) int {
		if c := a.LiveStart.Compare(b.LiveStart); c != 0 {
			return c
		}
		return cmp.Compare(a.Unit, b.Unit)
	})
	return seeds, live
}

// verdictNodes are the nodes a verdict's "; reserved from T on n0, n2"
// names, nil without them.
func verdictNodes(verdict string) []string {
	i := strings.LastIndex(verdict, "; reserved from ")
	if i < 0 {
		return nil
	}
	_, nodes, ok := strings.Cut(verdict[i:], " on ")
	if !ok {
		return nil
	}
	return strings.Split(nodes, ", ")
}

// settleLive fills in what the pass made of each live reservation: left
// out (skipped, by the group), or honoured, with the reservation the pass
// kept for it (kept), if any.
func settleLive(live []LiveReservation, skipped map[gangbook.GroupKey]string, kept []admission.ReservationView) {
	byUnit := map[string]admission.ReservationView{}
	for _, r := range kept {
		byUnit[r.Unit] = r
	}
	for i := range live {
		lr := &live[i]
		if lr.Skipped != "" {
			continue
		}
		ns, name, _ := strings.Cut(strings.TrimPrefix(lr.Unit, "pg:"), "/")
		if why, ok := skipped[gangbook.GroupKey{Namespace: ns, Name: name}]; ok {
			lr.Skipped = why
			continue
		}
		lr.Honoured = true
		if r, ok := byUnit[lr.Unit]; ok {
			at := r.Start
			lr.Start, lr.Nodes = &at, r.Nodes
		}
	}
}

// printLive shows the live plan's reservations what-if held the job to,
// and those it left out.
func printLive(w io.Writer, live []LiveReservation) error {
	if len(live) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nThe live plan's reservations (planned first, by expected start):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESERVED\tLIVE\tHONOURED\tTHIS PASS")
	for _, lr := range live {
		liveAt := "-"
		if !lr.LiveStart.IsZero() {
			liveAt = lr.LiveStart.Format(time.RFC3339)
			if len(lr.LiveNodes) > 0 {
				liveAt += " on " + strings.Join(lr.LiveNodes, ", ")
			}
		}
		honoured, pass := "yes", "not kept (admitted, or no longer among its queue's first refused for room)"
		switch {
		case lr.Skipped != "":
			honoured, pass = "no", "left out: "+lr.Skipped
		case lr.Start != nil:
			pass = "from " + lr.Start.Format(time.RFC3339) + " on " + strings.Join(lr.Nodes, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", lr.Unit, liveAt, honoured, pass)
	}
	return tw.Flush()
}
