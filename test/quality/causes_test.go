package quality

import (
	"reflect"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/test/quality/score"
)

func TestParseReservation(t *testing.T) {
	start, nodes, ok := parseReservation("waiting for room: cluster has cpu 3 of 8 free; reserved from 2026-12-05T07:12:00Z on n0, n2")
	if !ok || !start.Equal(time.Date(2026, 12, 5, 7, 12, 0, 0, time.UTC)) || !reflect.DeepEqual(nodes, []string{"n0", "n2"}) {
		t.Errorf("got %v %v %v", start, nodes, ok)
	}
	if _, _, ok := parseReservation("queue team-a: cpu request 3 exceeds remaining capability 1"); ok {
		t.Error("a verdict without a reservation parsed as one")
	}
}

func TestOverranNote(t *testing.T) {
	got, ok := overranNote("ran 12s past its run-time limit of 30s (pod annotation scheduling.caldera.dev/max-run-seconds) into the reservation of pg:team-d/job-0096 from 2026-12-05T10:20:00Z")
	if !ok || got != "pg:team-d/job-0096" {
		t.Errorf("overranNote = %q, %v", got, ok)
	}
	if _, ok := overranNote(`Reclaimed for a/b of queue "a"`); ok {
		t.Error("a reclaim's note read as an overrun's")
	}
}

func TestCalderaNote(t *testing.T) {
	for _, tc := range []struct {
		note, reason, preemptor string
	}{
		{`Reclaimed for team-b/job-0141-3 of queue "team-b": queue "team-a" holds more than its deserved share`, score.ReasonReclaimed, "team-b/job-0141-3"},
		{`Preempted by team-a/job-0007-0-r2, a higher-priority group of queue "team-a"`, score.ReasonPreempted, "team-a/job-0007-0-r2"},
		// Upstream's Executor, and CalderaReclaim's Event on the PodGroup.
		{"Preempted by pod 3f6c2a4e-0000-4000-8000-000000000000 on node n3", "", ""},
		{`team-a/job-0003-1: Reclaimed for team-b/x of queue "team-b"`, "", ""},
		{"", "", ""},
	} {
		reason, pre, ok := calderaNote(tc.note)
		if reason != tc.reason || pre != tc.preemptor || ok != (tc.reason != "") {
			t.Errorf("calderaNote(%q) = %q, %q, %v; want %q, %q", tc.note, reason, pre, ok, tc.reason, tc.preemptor)
		}
	}
	for pod, want := range map[string]int{"team-b/job-0141-3": 141, "job-0007-0-r2": 7, "pg:team-a/job-0012": 12, "probe": -1} {
		if got := jobIDOf(pod); got != want {
			t.Errorf("jobIDOf(%q) = %d, want %d", pod, got, want)
		}
	}
}

// TestAttribute plays a hand-made Event stream: a reservation for job-0001
// on n1 and n2 from t0+100s, announced at t0+10s and ended by its
// admission at t0+90s; job-0002 admitted on lent room, then again plainly.
func TestAttribute(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	reserved := "waiting for room: ...; reserved from " + at(100).Format(time.RFC3339) + " on n1, n2"
	evs := []schedEvent{
		{at: at(10), kind: "PodGroup", object: "job-0001", reason: reasonNotAdmitted, note: reserved},
		{at: at(12), kind: "PodGroup", object: "job-0002", reason: reasonAdmitted, note: "admitted to queue b on idle room " + lentNote + " (reclaimable)"},
		// The same verdict again (a series): the reservation goes on.
		{at: at(30), kind: "PodGroup", object: "job-0001", reason: reasonNotAdmitted, note: reserved},
		// Upstream's Event comes first; CalderaReclaim's says why.
		{at: at(50), kind: "Pod", object: "job-0002-0", related: "a/job-0009-0", reason: score.ReasonPreempted, note: "Preempted by pod 1234 on node n5"},
		{at: at(50), kind: "Pod", object: "job-0002-0", reason: score.ReasonReclaimed, note: `Reclaimed for a/job-0009-0 of queue "a": queue "b" holds more than its deserved share`},
		{at: at(50), kind: "PodGroup", object: "job-0002", reason: score.ReasonReclaimed, note: `job-0002-0: Reclaimed for a/job-0009-0 of queue "a": ...`},
		{at: at(60), kind: "PodGroup", object: "job-0002", reason: reasonAdmitted, note: "admitted to queue b"},
		{at: at(90), kind: "PodGroup", object: "job-0001", reason: reasonAdmitted, note: "admitted to queue a"},
		{at: at(95), kind: "Pod", object: "job-0003-0", reason: score.ReasonReclaimed, note: `Reclaimed for a/job-0001-4 of queue "a": ...`},
		{at: at(120), kind: "Pod", object: "job-0004-0", reason: score.ReasonPreempted, note: `Preempted by c/job-0005-0, a higher-priority group of queue "c"`},
		{at: at(130), kind: "Pod", object: "job-0002-1-r1", reason: score.ReasonReclaimed, note: `Reclaimed for a/job-0010-0 of queue "a": ...`},
		// Only upstream's Event: the preemptor is known, the reason not.
		{at: at(140), kind: "Pod", object: "job-0011-0", related: "d/job-0012-3", reason: score.ReasonPreempted, note: "Preempted by pod 5678 on node n1"},
		{at: at(150), kind: "Pod", object: "job-0013-0", reason: score.ReasonReclaimed, note: `Reclaimed for c/job-0014-0 of queue "c": ...`},
		// Admission's eviction of a pod past its limit, on the pod and on
		// the reserved group.
		{at: at(89), kind: "Pod", object: "job-0015-0", reason: score.ReasonOverran,
			note: "ran 3s past its run-time limit of 60s (pod annotation scheduling.caldera.dev/max-run-seconds) into the reservation of pg:a/job-0001 from " + at(100).Format(time.RFC3339)},
		{at: at(89), kind: "PodGroup", object: "job-0001", reason: score.ReasonOverran, note: "b/job-0015-0: ran 3s past ..."},
		// A group of one's reservation: the Event on the reserved pod
		// names another victim, and that pod's own eviction comes later.
		{at: at(160), kind: "Pod", object: "job-0016-0", reason: score.ReasonOverran,
			note: "b/job-0017-0: ran 1s past its run-time limit of 9s (pod annotation scheduling.caldera.dev/max-run-seconds) into the reservation of pod:b/job-0016-0 from " + at(160).Format(time.RFC3339)},
		{at: at(190), kind: "Pod", object: "job-0016-0", related: "a/job-0018-1", reason: score.ReasonPreempted, note: "Preempted by pod 9abc on node n7"},
		{at: at(190), kind: "Pod", object: "job-0016-0", reason: score.ReasonReclaimed, note: `Reclaimed for a/job-0018-1 of queue "a": queue "b" holds more than its deserved share`},
	}
	victims := []victim{
		// Lent at 12 s, evicted at 50 s.
		{pod: "job-0002-0", unit: "job-0002", node: "n5", bound: at(13), at: at(50)},
		// Bound at 20 s on n2, which job-0001 needs from 100 s: backfill,
		// evicted for job-0001 (admitted at 90 s, before its reservation's
		// start).
		{pod: "job-0003-0", unit: "job-0003-0", node: "n2", bound: at(20), at: at(95)},
		// Bound on n2 at 5 s, before the reservation was announced, and
		// evicted after its start: not backfill.
		{pod: "job-0004-0", unit: "job-0004-0", node: "n2", bound: at(5), at: at(120)},
		// Re-admitted plainly at 60 s: not lent any more.
		{pod: "job-0002-1-r1", unit: "job-0002", node: "n5", bound: at(61), at: at(130)},
		// Backfilled on n1 at 40 s, evicted with no Event: not known to
		// be for the reservation.
		{pod: "job-0006-0", unit: "job-0006-0", node: "n1", bound: at(40), at: at(101)},
		// Its own reservation's node: not backfill.
		{pod: "job-0001-1", unit: "job-0001", node: "n1", bound: at(40), at: at(101)},
		// On a node the reservation does not name; never bound.
		{pod: "job-0007-0", unit: "job-0007-0", node: "n3", bound: at(40), at: at(101)},
		{pod: "job-0008-0", unit: "job-0008-0", at: at(101)},
		{pod: "job-0011-0", unit: "job-0011-0", node: "n4", bound: at(100), at: at(140)},
		// Backfilled on n1, evicted for another group than the reserved one.
		{pod: "job-0013-0", unit: "job-0013-0", node: "n1", bound: at(50), at: at(150)},
		// Backfilled on n2 at 26 s, evicted past its limit for job-0001.
		{pod: "job-0015-0", unit: "job-0015-0", node: "n2", bound: at(26), at: at(89)},
		{pod: "job-0016-0", unit: "job-0016-0", node: "n7", bound: at(170), at: at(190)},
	}
	want := []attribution{
		{reason: score.ReasonReclaimed, preemptor: "a/job-0009-0", lent: true},
		{reason: score.ReasonReclaimed, preemptor: "a/job-0001-4", backfilled: true, forReservation: true},
		{reason: score.ReasonPreempted, preemptor: "c/job-0005-0"},
		{reason: score.ReasonReclaimed, preemptor: "a/job-0010-0"},
		{backfilled: true},
		{}, {}, {},
		{preemptor: "d/job-0012-3"},
		{reason: score.ReasonReclaimed, preemptor: "c/job-0014-0", backfilled: true},
		{reason: score.ReasonOverran, preemptor: "pg:a/job-0001", backfilled: true, forReservation: true},
		{reason: score.ReasonReclaimed, preemptor: "a/job-0018-1"},
	}
	got := attribute(evs, victims)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("victim %s: got %+v, want %+v", victims[i].pod, got[i], want[i])
		}
	}
	// The reservation ended at job-0001's admission.
	res := reservations(evs)
	if len(res) != 1 || !res[0].from.Equal(at(10)) || !res[0].to.Equal(at(90)) || !res[0].start.Equal(at(100)) {
		t.Errorf("reservations %+v", res)
	}
}

// Evictions are grouped by the job they made room for, in order of first
// eviction; those without a known preemptor stand alone.
func TestEvictionRows(t *testing.T) {
	log := []score.Eviction{
		{T: 10, Job: 1, PreemptorJob: 7},
		{T: 11, Job: 2, PreemptorJob: -1},
		{T: 12, Job: 1, PreemptorJob: 7},
		{T: 13, Job: 3, PreemptorJob: 8},
		{T: 14, Job: 4, PreemptorJob: -1},
		{T: 90, Job: 5, PreemptorJob: 7},
	}
	rows := evictionRows(log)
	var got [][]int
	for _, r := range rows {
		ids := []int{r.job}
		for _, v := range r.victims {
			ids = append(ids, v.Job)
		}
		got = append(got, ids)
	}
	want := [][]int{{7, 1, 1, 5}, {-1, 2}, {8, 3}, {-1, 4}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rows (preemptor, victims...) %v, want %v", got, want)
	}
}

// Each job given an ETA gets its admission Events in order, a repeated
// one once; other jobs' and other reasons' are left out.
func TestVerdictLogs(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	evs := []schedEvent{
		{at: at(1), kind: "PodGroup", object: "job-0001", reason: reasonNotAdmitted, note: "a; reserved from T1 on n1"},
		{at: at(2), kind: "Pod", object: "job-0002-0", reason: reasonNotAdmitted, note: "b"},
		{at: at(3), kind: "PodGroup", object: "job-0001", reason: reasonNotAdmitted, note: "a; reserved from T1 on n1"},
		{at: at(4), kind: "PodGroup", object: "job-0001", reason: score.ReasonOverran, note: "x/job-0009-0: ran 2s past ..."},
		{at: at(5), kind: "PodGroup", object: "job-0001", reason: "Scheduled", note: "ignored"},
		{at: at(6), kind: "Pod", object: "job-0003-0-r1", reason: reasonNotAdmitted, note: "c; reserved from T2 on n2"},
		{at: at(7), kind: "PodGroup", object: "job-0001", reason: reasonNotAdmitted, note: "a; reserved from T3 on n1"},
		{at: at(8), kind: "PodGroup", object: "job-0001", reason: reasonAdmitted, note: "admitted to queue a"},
	}
	got := verdictLogs(evs, map[int]bool{1: true, 3: true})
	var notes []string
	for _, e := range got[1] {
		notes = append(notes, e.reason+": "+e.note)
	}
	want := []string{
		"NotAdmitted: a; reserved from T1 on n1",
		"OverranRunLimit: x/job-0009-0: ran 2s past ...",
		"NotAdmitted: a; reserved from T3 on n1",
		"Admitted: admitted to queue a",
	}
	if !reflect.DeepEqual(notes, want) || len(got[3]) != 1 || len(got) != 2 {
		t.Errorf("job 1: %q, want %q; job 3: %v; jobs %d", notes, want, got[3], len(got))
	}
}
