package enqueue

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/caldera-sched/caldera/pkg/admission"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// Args are CalderaEnqueue's plugin args. Unset fields take the defaults below.
type Args struct {
	// DefaultQueue takes groups that name no queue; the scheduler creates it
	// (weight 1, reclaimable) when missing. Default "default".
	DefaultQueue string `json:"defaultQueue,omitempty"`
	// AdmitSingletons: a pod without a PodGroup is a group of one in its queue
	// and waits for admission like a gang. Default true.
	AdmitSingletons *bool `json:"admitSingletons,omitempty"`
	// OvercommitFactor multiplies the cluster's allocatable in the cluster
	// check; must be at least 1.0. Default 1.2.
	OvercommitFactor *float64 `json:"overcommitFactor,omitempty"`
	// StarvationThresholdSeconds: a group waiting longer at the head of its
	// queue reserves the queue; 0 turns the guard off. Default 300.
	StarvationThresholdSeconds *int64 `json:"starvationThresholdSeconds,omitempty"`
	// AdmissionPeriodSeconds: how often a pass runs without events. Default 2.
	AdmissionPeriodSeconds *int64 `json:"admissionPeriodSeconds,omitempty"`
	// CheckResourceQuota: a group's minimum must fit its namespace's
	// ResourceQuotas. Default true.
	CheckResourceQuota *bool `json:"checkResourceQuota,omitempty"`
	// LendIdleRoom: when reclaim runs, a group of a reclaimable queue
	// refused only by its deserved share is admitted on room nobody
	// entitled to it can use now; reclaim takes it back later. Default
	// false: on the quality benchmark's traces loans gained no utilization
	// and lost 2-6x the work to evictions (docs/quality.md).
	LendIdleRoom *bool `json:"lendIdleRoom,omitempty"`
	// ReservationsPerQueue: how many groups of each queue that cannot
	// start now (refused for room) get a reservation, the earliest time
	// their members fit given the run-time limits of running pods; later
	// work starts now only where it delays none (backfill). 0 turns
	// reservations off. Default 1 (the head), at most
	// MaxReservationsPerQueue.
	ReservationsPerQueue *int32 `json:"reservationsPerQueue,omitempty"`
	// EvictOverruns: when a reservation's start has come and a pod on its
	// nodes is still running past a run-time limit it declared by
	// annotation (scheduling.caldera.dev/max-run-seconds, on the pod or
	// its PodGroup), the pod is evicted, as few as free the reservation's
	// room, longest overdue first. Default true: the reservation was
	// planned on that promise, and without the eviction it waits for as
	// long as the pod runs.
	EvictOverruns *bool `json:"evictOverruns,omitempty"`
}

// Defaults for Args.
const (
	DefaultOvercommitFactor           = 1.2
	DefaultStarvationThresholdSeconds = 300
	DefaultAdmissionPeriodSeconds     = 2
	DefaultReservationsPerQueue       = 1
	// MaxReservationsPerQueue bounds reservationsPerQueue: each costs a
	// search over the running pods' ends in every pass, and a pass plans
	// at most 64 in all.
	MaxReservationsPerQueue = 16
)

// SetDefaults fills unset fields.
func (a *Args) SetDefaults() {
	if a.DefaultQueue == "" {
		a.DefaultQueue = qapi.DefaultQueueName
	}
	if a.AdmitSingletons == nil {
		t := true
		a.AdmitSingletons = &t
	}
	if a.CheckResourceQuota == nil {
		t := true
		a.CheckResourceQuota = &t
	}
	if a.LendIdleRoom == nil {
		f := false
		a.LendIdleRoom = &f
	}
	if a.OvercommitFactor == nil {
		f := DefaultOvercommitFactor
		a.OvercommitFactor = &f
	}
	if a.StarvationThresholdSeconds == nil {
		v := int64(DefaultStarvationThresholdSeconds)
		a.StarvationThresholdSeconds = &v
	}
	if a.AdmissionPeriodSeconds == nil {
		v := int64(DefaultAdmissionPeriodSeconds)
		a.AdmissionPeriodSeconds = &v
	}
	if a.ReservationsPerQueue == nil {
		v := int32(DefaultReservationsPerQueue)
		a.ReservationsPerQueue = &v
	}
	if a.EvictOverruns == nil {
		t := true
		a.EvictOverruns = &t
	}
}

// Validate checks defaulted args; each error names its field.
func (a *Args) Validate() error {
	var errs field.ErrorList
	if f := *a.OvercommitFactor; math.IsNaN(f) || math.IsInf(f, 0) || f < 1 {
		errs = append(errs, field.Invalid(field.NewPath("overcommitFactor"), f, "must be at least 1.0"))
	}
	if v := *a.StarvationThresholdSeconds; v < 0 {
		errs = append(errs, field.Invalid(field.NewPath("starvationThresholdSeconds"), v, "must not be negative"))
	}
	if v := *a.AdmissionPeriodSeconds; v <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("admissionPeriodSeconds"), v, "must be greater than 0"))
	}
	if v := *a.ReservationsPerQueue; v < 0 || v > MaxReservationsPerQueue {
		errs = append(errs, field.Invalid(field.NewPath("reservationsPerQueue"), v, "must be between 0 and 16"))
	}
	return errs.ToAggregate()
}

// Options converts defaulted args for the cache.
func (a *Args) Options() admission.Options {
	return admission.Options{
		DefaultQueue:         a.DefaultQueue,
		AdmitSingletons:      *a.AdmitSingletons,
		OvercommitFactor:     *a.OvercommitFactor,
		StarvationThreshold:  starvation(*a.StarvationThresholdSeconds),
		Period:               time.Duration(*a.AdmissionPeriodSeconds) * time.Second,
		CheckResourceQuota:   *a.CheckResourceQuota,
		LendIdleRoom:         *a.LendIdleRoom,
		ReservationsPerQueue: reservations(*a.ReservationsPerQueue),
		EvictOverruns:        *a.EvictOverruns,
	}
}

// starvation converts the arg: pkg/queue reads 0 as its default and a negative
// value as "off", while users write 0 for "off".
func starvation(seconds int64) time.Duration {
	if seconds == 0 {
		return -1
	}
	return time.Duration(seconds) * time.Second
}

// reservations converts the arg as starvation does: 0 is "off" for users
// and "the default" for pkg/queue.
func reservations(n int32) int {
	if n == 0 {
		return -1
	}
	return int(n)
}
