package reclaim

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Args are CalderaReclaim's plugin args. Unset fields take the defaults below.
type Args struct {
	// EnableReclaim: a group whose queue is below its deserved share may
	// evict pods of other reclaimable queues above theirs. Default true.
	EnableReclaim *bool `json:"enableReclaim,omitempty"`
	// EnablePreemption: a group may evict lower-priority groups of its own
	// queue. Default true.
	EnablePreemption *bool `json:"enablePreemption,omitempty"`
	// MinVictimRuntimeSeconds protects pods that started less than this long
	// ago. Default 0 (no protection): the share rules alone prevent thrash.
	MinVictimRuntimeSeconds *int64 `json:"minVictimRuntimeSeconds,omitempty"`
}

// SetDefaults fills unset fields.
func (a *Args) SetDefaults() {
	t := true
	if a.EnableReclaim == nil {
		a.EnableReclaim = &t
	}
	if a.EnablePreemption == nil {
		a.EnablePreemption = &t
	}
	if a.MinVictimRuntimeSeconds == nil {
		var zero int64
		a.MinVictimRuntimeSeconds = &zero
	}
}

// Validate checks defaulted args; each error names its field.
func (a *Args) Validate() error {
	var errs field.ErrorList
	if v := *a.MinVictimRuntimeSeconds; v < 0 {
		errs = append(errs, field.Invalid(field.NewPath("minVictimRuntimeSeconds"), v, "must not be negative"))
	}
	return errs.ToAggregate()
}

func (a *Args) minRuntime() time.Duration {
	return time.Duration(*a.MinVictimRuntimeSeconds) * time.Second
}
