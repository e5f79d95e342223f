package localcluster

import (
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
)

// newComponentGlobals returns a feature-gate and version registry of its own
// for one component run in this process, as its command would build: its
// flags (--feature-gates, --emulated-version) change this copy, so
// consecutive apiservers and schedulers in one process share no such state.
func newComponentGlobals() (basecompatibility.ComponentGlobalsRegistry, featuregate.MutableVersionedFeatureGate, error) {
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effectiveVersion := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	effectiveVersion.SetEmulationVersion(featureGate.EmulationVersion())
	effectiveVersion.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	globals := basecompatibility.NewComponentGlobalsRegistry()
	if err := globals.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		return nil, nil, err
	}
	return globals, featureGate, nil
}
