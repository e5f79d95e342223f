package status

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// fakeLock is a resource lock whose writes fail when err is set.
type fakeLock struct {
	id     string
	err    error
	writes int
}

func (f *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	return nil, nil, errors.New("not used")
}
func (f *fakeLock) Create(context.Context, resourcelock.LeaderElectionRecord) error {
	f.writes++
	return f.err
}
func (f *fakeLock) Update(context.Context, resourcelock.LeaderElectionRecord) error {
	f.writes++
	return f.err
}
func (f *fakeLock) RecordEvent(string) {}
func (f *fakeLock) Identity() string   { return f.id }
func (f *fakeLock) Describe() string   { return "kube-system/caldera-scheduler" }

func TestLeadershipWithoutLeaderElection(t *testing.T) {
	l := NewLeadership()
	select {
	case <-l.resolved:
		t.Fatal("resolved before Follow")
	default:
	}
	l.Follow(nil)
	<-l.resolved
	until, ok := l.Leading(time.Now().Add(time.Hour))
	if !ok || !until.IsZero() {
		t.Fatalf("leading() = %v, %v; want always leading with no end", until, ok)
	}
}

func TestLeadershipFollowsRenewals(t *testing.T) {
	const renew = 10 * time.Second
	me := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	other := resourcelock.LeaderElectionRecord{HolderIdentity: "other"}
	released := resourcelock.LeaderElectionRecord{}
	type write struct {
		create bool
		rec    resourcelock.LeaderElectionRecord
		err    error
	}
	cases := []struct {
		name    string
		writes  []write
		leading bool
	}{
		{name: "nothing written yet", leading: false},
		{name: "acquired by create", writes: []write{{create: true, rec: me}}, leading: true},
		{name: "renewed by update", writes: []write{{rec: me}, {rec: me}}, leading: true},
		{name: "failed acquisition", writes: []write{{create: true, rec: me, err: errors.New("conflict")}}, leading: false},
		{name: "failed renewal keeps the last good one", writes: []write{{rec: me}, {rec: me, err: errors.New("timeout")}}, leading: true},
		{name: "released", writes: []write{{rec: me}, {rec: released}}, leading: false},
		{name: "a write naming another holder", writes: []write{{rec: me}, {rec: other}}, leading: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLeadership()
			inner := &fakeLock{id: "me"}
			le := &leaderelection.LeaderElectionConfig{Lock: inner, RenewDeadline: renew}
			l.Follow(le)
			if le.Lock.Identity() != "me" || le.Lock.Describe() != inner.Describe() {
				t.Fatalf("the wrapped lock does not delegate: identity %q", le.Lock.Identity())
			}
			first := time.Now()
			for _, w := range tc.writes {
				inner.err = w.err
				var err error
				if w.create {
					err = le.Lock.Create(t.Context(), w.rec)
				} else {
					err = le.Lock.Update(t.Context(), w.rec)
				}
				if !errors.Is(err, w.err) {
					t.Fatalf("write returned %v, want %v", err, w.err)
				}
			}
			last := time.Now()
			if inner.writes != len(tc.writes) {
				t.Fatalf("%d writes reached the lock, want %d", inner.writes, len(tc.writes))
			}
			until, ok := l.Leading(last)
			if ok != tc.leading {
				t.Fatalf("leading = %v, want %v", ok, tc.leading)
			}
			if !tc.leading {
				return
			}
			// The right ends RenewDeadline after a successful write was sent.
			if until.Before(first.Add(renew)) || until.After(last.Add(renew)) {
				t.Fatalf("leading until %v, want within [%v, %v]", until, first.Add(renew), last.Add(renew))
			}
			if _, ok := l.Leading(until); ok {
				t.Fatal("still leading at the end of the renewal's deadline")
			}
		})
	}
}

func TestLeadershipFollowOnce(t *testing.T) {
	l := NewLeadership()
	le := &leaderelection.LeaderElectionConfig{Lock: &fakeLock{id: "me"}, RenewDeadline: time.Second}
	l.Follow(le)
	wrapped := le.Lock
	l.Follow(le)
	if le.Lock != wrapped {
		t.Fatal("a second Follow wrapped the lock again")
	}
	l.Follow(nil)
	if _, ok := l.Leading(time.Now()); ok {
		t.Fatal("a later Follow(nil) turned leader election off")
	}
}
