package binder

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Args are CalderaBinder's plugin args. Unset fields take the defaults below.
type Args struct {
	// MaxConcurrentBinds bounds the binding API calls in flight at once,
	// across every profile of the scheduler (the first profile's value is
	// the one used; profiles that set another are refused). Default 64,
	// below kube-apiserver's default of 100 concurrent HTTP/2 streams per
	// connection, so that releasing a large gang does not make the client
	// open a TLS connection per excess request.
	MaxConcurrentBinds *int32 `json:"maxConcurrentBinds,omitempty"`
}

// Defaults and bounds for Args.
const (
	DefaultMaxConcurrentBinds = 64
	MaxMaxConcurrentBinds     = 10000
)

// SetDefaults fills unset fields.
func (a *Args) SetDefaults() {
	if a.MaxConcurrentBinds == nil {
		v := int32(DefaultMaxConcurrentBinds)
		a.MaxConcurrentBinds = &v
	}
}

// Validate checks defaulted args; each error names its field.
func (a *Args) Validate() error {
	if v := *a.MaxConcurrentBinds; v < 1 || v > MaxMaxConcurrentBinds {
		return field.ErrorList{field.Invalid(field.NewPath("maxConcurrentBinds"), v, "must be between 1 and 10000")}.ToAggregate()
	}
	return nil
}
