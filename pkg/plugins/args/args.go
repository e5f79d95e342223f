// Package args decodes Caldera plugin args from a KubeSchedulerConfiguration.
package args

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Decode fills into from a plugin's pluginConfig args. kube-scheduler hands
// out-of-tree args over as raw JSON or YAML; decoding is strict, so a misspelt
// field is a startup error instead of a silently ignored setting.
func Decode(plugin string, obj runtime.Object, into any) error {
	if obj == nil {
		return nil
	}
	raw, ok := obj.(*runtime.Unknown)
	if !ok {
		return fmt.Errorf("%s: want args of type runtime.Unknown, got %T", plugin, obj)
	}
	if len(raw.Raw) == 0 {
		return nil
	}
	if err := yaml.UnmarshalStrict(raw.Raw, into); err != nil {
		return fmt.Errorf("%s args: %w", plugin, err)
	}
	return nil
}

// Defaulted is a plugin's args type: unset fields get defaults, then the
// whole is validated.
type Defaulted interface {
	SetDefaults()
	Validate() error
}

// Load decodes obj into a strictly, fills its defaults and validates it; every
// error names the plugin.
func Load(plugin string, obj runtime.Object, a Defaulted) error {
	if err := Decode(plugin, obj, a); err != nil {
		return err
	}
	a.SetDefaults()
	if err := a.Validate(); err != nil {
		return fmt.Errorf("%s args: %w", plugin, err)
	}
	return nil
}
