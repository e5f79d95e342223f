package runlimit

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		problem problem
		detail  string // a fragment of the message, when invalid
	}{
		{in: "3600", want: 3600},
		{in: "1", want: 1},
		{in: "2147483647", want: MaxSeconds},
		{in: "+60", want: 60},  // ParseInt's syntax
		{in: "0060", want: 60}, // leading zeros are still base 10
		{in: "", problem: problemEmpty, detail: `empty: give the limit in whole seconds, such as "3600"`},
		{in: "abc", problem: problemNotInteger, detail: `not a whole number of seconds, such as "3600"`},
		{in: "1.5", problem: problemNotInteger},
		{in: "1e3", problem: problemNotInteger},
		{in: " 60", problem: problemNotInteger}, // no silent trimming: the quoted value shows the space
		{in: "0s", problem: problemNotInteger},  // a zero duration suggests nothing
		{in: "3000000h", problem: problemNotInteger},
		{in: "2h", problem: problemDuration, detail: `a duration, not a whole number of seconds: write "7200"`},
		{in: "1h30m", problem: problemDuration, detail: `write "5400"`},
		{in: "1500ms", problem: problemDuration, detail: `write "2"`}, // rounded up
		{in: "0", problem: problemNotPositive, detail: "not positive: a limit is at least 1 second"},
		{in: "-0", problem: problemNotPositive},
		{in: "-5", problem: problemNotPositive},
		{in: "-99999999999999999999", problem: problemNotPositive}, // below int64
		{in: "2147483648", problem: problemTooLarge, detail: "over the maximum of 2147483647 seconds"},
		{in: "99999999999999999999", problem: problemTooLarge}, // above int64
	} {
		got, err := Parse(tc.in)
		if tc.problem == 0 {
			if err != nil || got != tc.want {
				t.Errorf("Parse(%q) = %d, %v; want %d, nil", tc.in, got, err, tc.want)
			}
			continue
		}
		var ie *InvalidError
		if !errors.As(err, &ie) || got != 0 {
			t.Errorf("Parse(%q) = %d, %v; want 0 and an *InvalidError", tc.in, got, err)
			continue
		}
		if ie.problem != tc.problem || ie.Value != tc.in {
			t.Errorf("Parse(%q): problem %d value %q; want %d %q", tc.in, ie.problem, ie.Value, tc.problem, tc.in)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.detail) || !strings.Contains(msg, Annotation) {
			t.Errorf("Parse(%q) message %q lacks %q or the key", tc.in, msg, tc.detail)
		}
	}
}

// TestInvalidMessage pins whole messages: they are what users read in
// Events, and each names where the annotation is, the key and the value.
func TestInvalidMessage(t *testing.T) {
	for _, tc := range []struct {
		err  InvalidError
		want string
	}{
		{InvalidError{Source: PodAnnotation, Value: "1h", problem: problemDuration, suggest: 3600},
			`pod annotation scheduling.caldera.dev/max-run-seconds="1h": a duration, not a whole number of seconds: write "3600"; ignored, as if absent`},
		{InvalidError{Source: GroupAnnotation, Value: "0", problem: problemNotPositive},
			`PodGroup annotation scheduling.caldera.dev/max-run-seconds="0": not positive: a limit is at least 1 second (leave the annotation out for no limit); ignored, as if absent`},
		{InvalidError{Value: "9999999999", problem: problemTooLarge},
			`annotation scheduling.caldera.dev/max-run-seconds="9999999999": over the maximum of 2147483647 seconds (about 68 years; leave the annotation out for no limit); ignored, as if absent`},
		{InvalidError{Source: PodAnnotation, Value: "soon", problem: problemNotInteger},
			`pod annotation scheduling.caldera.dev/max-run-seconds="soon": not a whole number of seconds, such as "3600"; ignored, as if absent`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("message\n got %s\nwant %s", got, tc.want)
		}
	}
	// A long value is cut in the message (an Event's is at most 1 KiB).
	long := strings.Repeat("9", 10000)
	_, err := Parse(long)
	if msg := err.Error(); len(msg) > 600 || !strings.Contains(msg, `99..."`) {
		t.Errorf("long value: message of %d bytes: %.200s", len(msg), msg)
	}
}

// FuzzParse: Parse never panics, returns a limit in [1, MaxSeconds] or 0
// with an *InvalidError whose message names the key, and agrees with
// itself.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"3600", "0", "-1", "", "2h", "1.5", "2147483648", "99999999999999999999", "+1", " 1", "1_000", "0x10", "\x00", "１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err == nil {
			if n < 1 || n > MaxSeconds {
				t.Fatalf("Parse(%q) = %d without an error", s, n)
			}
			return
		}
		var ie *InvalidError
		if !errors.As(err, &ie) || n != 0 || ie.Value != s {
			t.Fatalf("Parse(%q) = %d, %#v", s, n, err)
		}
		if msg := err.Error(); !strings.Contains(msg, Annotation) || len(msg) > 600 {
			t.Fatalf("Parse(%q): message %q", s, msg)
		}
		if ie.problem == problemDuration && (ie.suggest < 1 || ie.suggest > MaxSeconds) {
			t.Fatalf("Parse(%q) suggests %d", s, ie.suggest)
		}
	})
}
