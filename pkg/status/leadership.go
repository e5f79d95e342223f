package status

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leadership tells the status writer whether its process is the scheduler
// that schedules. Status is made of what scheduling cycles saw (unschedulable
// reasons, Permit waits, the first attempt) and of this process's admission
// decisions, so it must be written by the replica that runs the cycles: a
// standby's cache never sees a cycle, and a writer elected through a Lease of
// its own could end up on the standby (one chance in two with two replicas),
// which would then write stale phases and drop the Unschedulable Events.
//
// kube-scheduler's leader elector is built inside app.Setup, after the plugin
// factories ran, and app.Run replaces its callbacks; what stays is its Lock.
// Follow wraps that Lock and sees every renewal the elector makes. The writer
// writes only until renewal + RenewDeadline: the elector itself gives up no
// earlier than that, and no other replica can take the Lease before renewal +
// LeaseDuration, which is longer. So two replicas never write at once.
type Leadership struct {
	resolved chan struct{}
	once     sync.Once

	mu sync.Mutex
	// elected is false when the scheduler runs without leader election: it
	// then schedules, and writes, unconditionally.
	elected       bool
	identity      string
	renewDeadline time.Duration
	until         time.Time
}

// NewLeadership returns a Leadership that nothing follows yet: a status writer
// tied to it waits until Follow is called.
func NewLeadership() *Leadership {
	return &Leadership{resolved: make(chan struct{})}
}

// AlwaysLeading returns a Leadership of a process that runs no leader
// election (Follow(nil)): its writer writes from the start. For tools
// and tests that build a cache without kube-scheduler's command.
func AlwaysLeading() *Leadership {
	l := NewLeadership()
	l.Follow(nil)
	return l
}

// Follow ties the Leadership to the scheduler's leader election: le is
// kube-scheduler's CompletedConfig.LeaderElection (nil when leader election is
// off). Call it after app.Setup and before app.Run, once; later calls do nothing.
func (l *Leadership) Follow(le *leaderelection.LeaderElectionConfig) {
	l.once.Do(func() {
		if le != nil {
			l.mu.Lock()
			l.elected = true
			l.identity = le.Lock.Identity()
			l.renewDeadline = le.RenewDeadline
			l.mu.Unlock()
			le.Lock = &observedLock{Interface: le.Lock, l: l}
		}
		close(l.resolved)
	})
}

// Leading reports whether this process may write now, and the moment its
// right ends (zero when leader election is off: no end).
func (l *Leadership) Leading(now time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.elected {
		return time.Time{}, true
	}
	return l.until, now.Before(l.until)
}

// observe records the outcome of one write of the leader record.
func (l *Leadership) observe(rec resourcelock.LeaderElectionRecord, err error, wrote time.Time) {
	if err != nil {
		// A failed renewal changes nothing: the right lapses at the deadline
		// of the last good one, as the elector's does.
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if rec.HolderIdentity == l.identity {
		l.until = wrote.Add(l.renewDeadline)
	} else {
		// The Lease was released (ReleaseOnCancel writes an empty holder).
		l.until = time.Time{}
	}
}

// observedLock is kube-scheduler's resource lock with every write of the
// leader record reported to a Leadership.
type observedLock struct {
	resourcelock.Interface
	l *Leadership
}

func (o *observedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	// The time is taken before the call: the Lease may be valid from the
	// moment the request is sent, never earlier.
	sent := time.Now()
	err := o.Interface.Create(ctx, rec)
	o.l.observe(rec, err, sent)
	return err
}

func (o *observedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	sent := time.Now()
	err := o.Interface.Update(ctx, rec)
	o.l.observe(rec, err, sent)
	return err
}
