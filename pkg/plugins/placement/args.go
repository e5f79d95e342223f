package placement

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Args are CalderaGangPlacement's plugin args. Unset fields take the defaults below.
type Args struct {
	// TopologyKeys are node label keys, most local first (e.g. a rack
	// label, then topology.kubernetes.io/zone): a gang is kept inside one
	// value of the first key when it fits there, else of the next. Default
	// [topology.kubernetes.io/zone]; a cluster without the labels gets a
	// neutral locality score.
	TopologyKeys []string `json:"topologyKeys,omitempty"`
	// PackingStrength in [0, 1] is the share of the score given to packing
	// (few nodes touched, little stranded room) against locality. Default 0.5.
	PackingStrength *float64 `json:"packingStrength,omitempty"`
}

// Defaults for Args.
const (
	DefaultTopologyKey     = "topology.kubernetes.io/zone"
	DefaultPackingStrength = 0.5
	// MaxTopologyKeys bounds the per-cycle work.
	MaxTopologyKeys = 8
)

// SetDefaults fills unset fields.
func (a *Args) SetDefaults() {
	if a.TopologyKeys == nil {
		a.TopologyKeys = []string{DefaultTopologyKey}
	}
	if a.PackingStrength == nil {
		v := DefaultPackingStrength
		a.PackingStrength = &v
	}
}

// Validate checks defaulted args; each error names its field.
func (a *Args) Validate() error {
	var errs field.ErrorList
	keys := field.NewPath("topologyKeys")
	if len(a.TopologyKeys) > MaxTopologyKeys {
		errs = append(errs, field.TooMany(keys, len(a.TopologyKeys), MaxTopologyKeys))
	}
	seen := sets.New[string]()
	for i, k := range a.TopologyKeys {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(keys.Index(i), k, msg))
		}
		if seen.Has(k) {
			errs = append(errs, field.Duplicate(keys.Index(i), k))
		}
		seen.Insert(k)
	}
	if v := *a.PackingStrength; !(v >= 0 && v <= 1) {
		errs = append(errs, field.Invalid(field.NewPath("packingStrength"), v, "must be between 0 and 1"))
	}
	return errs.ToAggregate()
}
