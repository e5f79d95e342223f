package gang

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Args are CalderaGang's plugin args. Unset fields take the defaults below.
type Args struct {
	// PermitWaitingTimeSeconds is how long a member waits in Permit for its
	// siblings when its PodGroup sets no scheduleTimeoutSeconds. Default 60.
	PermitWaitingTimeSeconds *int64 `json:"permitWaitingTimeSeconds,omitempty"`
	// PodGroupBackoffSeconds is how long a gang that failed waits before its
	// next attempt; it doubles on consecutive failures. 0 disables it. Default 1.
	PodGroupBackoffSeconds *int64 `json:"podGroupBackoffSeconds,omitempty"`
	// PodGroupMaxBackoffSeconds caps the doubling. Default 10, as kube-scheduler
	// caps a pod's backoff (podMaxBackoffSeconds): a gang that failed while the
	// cluster was busy is not kept out for long once room frees.
	PodGroupMaxBackoffSeconds *int64 `json:"podGroupMaxBackoffSeconds,omitempty"`
	// StatusSyncPeriodSeconds is how often the leader writes changed PodGroup
	// status. Default 1.
	// The replica holding kube-scheduler's leader Lease writes it; there is
	// no Lease of Caldera's own.
	StatusSyncPeriodSeconds *int64 `json:"statusSyncPeriodSeconds,omitempty"`
}

// Defaults for Args.
const (
	DefaultPermitWaitingTimeSeconds  = 60
	DefaultPodGroupBackoffSeconds    = 1
	DefaultPodGroupMaxBackoffSeconds = 10
	DefaultStatusSyncPeriodSeconds   = 1
)

func orDefault(p *int64, def int64) *int64 {
	if p == nil {
		return &def
	}
	return p
}

// SetDefaults fills unset fields.
func (a *Args) SetDefaults() {
	a.PermitWaitingTimeSeconds = orDefault(a.PermitWaitingTimeSeconds, DefaultPermitWaitingTimeSeconds)
	a.PodGroupBackoffSeconds = orDefault(a.PodGroupBackoffSeconds, DefaultPodGroupBackoffSeconds)
	a.PodGroupMaxBackoffSeconds = orDefault(a.PodGroupMaxBackoffSeconds, DefaultPodGroupMaxBackoffSeconds)
	a.StatusSyncPeriodSeconds = orDefault(a.StatusSyncPeriodSeconds, DefaultStatusSyncPeriodSeconds)
}

// Validate checks defaulted args; each error names its field.
func (a *Args) Validate() error {
	var errs field.ErrorList
	if v := *a.PermitWaitingTimeSeconds; v <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("permitWaitingTimeSeconds"), v, "must be greater than 0"))
	}
	if v := *a.PodGroupBackoffSeconds; v < 0 {
		errs = append(errs, field.Invalid(field.NewPath("podGroupBackoffSeconds"), v, "must not be negative"))
	}
	if v := *a.PodGroupMaxBackoffSeconds; v < *a.PodGroupBackoffSeconds {
		errs = append(errs, field.Invalid(field.NewPath("podGroupMaxBackoffSeconds"), v, "must be at least podGroupBackoffSeconds"))
	}
	if v := *a.StatusSyncPeriodSeconds; v <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("statusSyncPeriodSeconds"), v, "must be greater than 0"))
	}
	return errs.ToAggregate()
}

func seconds(v *int64) time.Duration { return time.Duration(*v) * time.Second }
