package localcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// SchedulerConfigChanges says how RewriteSchedulerConfig changes a
// KubeSchedulerConfiguration so that a scheduler runs against a local
// cluster.
type SchedulerConfigChanges struct {
	// Kubeconfig becomes clientConnection.kubeconfig.
	Kubeconfig string
	// QPS and Burst become clientConnection.qps and burst, when not zero.
	QPS   float32
	Burst int32
	// KeepConfiguredQPS applies QPS and Burst only where the configuration
	// sets none (zero, which kube-scheduler's defaulting also reads as
	// unset).
	KeepConfiguredQPS bool
	// LeaderElection turns leader election on; nil turns it off.
	LeaderElection *LeaderElection
	// PluginArgs are merged, in order, into every profile (MergePluginArgs).
	PluginArgs []PluginArgs
	// Edits run last, in order.
	Edits []func(*configv1.KubeSchedulerConfiguration) error
}

// LeaderElection is the leader election of a rewritten configuration: on a
// Lease (resourceLock leases) named ResourceName in ResourceNamespace, with
// the configuration's timing, or a retry period of DefaultRetryPeriod when
// it sets none and DefaultRetryPeriod is not zero.
type LeaderElection struct {
	// ResourceName and ResourceNamespace name the Lease.
	ResourceName      string
	ResourceNamespace string
	// DefaultRetryPeriod is the retry period where the configuration sets
	// none (zero: kube-scheduler's default).
	DefaultRetryPeriod time.Duration
}

// PluginArgs are arguments to merge into a plugin's pluginConfig.
type PluginArgs struct {
	// Plugin is the plugin's name in pluginConfig.
	Plugin string
	// Args are JSON-style values (maps, slices, strings, numbers, bools).
	Args map[string]any
}

// ReadSchedulerConfig decodes the kubescheduler.config.k8s.io/v1
// KubeSchedulerConfiguration at path strictly, as kube-scheduler does: a
// field it does not know (or a key in the wrong case, or twice) is an error
// here, as kube-scheduler would report it, rather than dropped by a lenient
// decode into the typed struct, which would silently run another
// configuration than the file says. Plugin args stay raw JSON: their
// plugins decode them.
func ReadSchedulerConfig(path string) (*configv1.KubeSchedulerConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scheduler config: %w", err)
	}
	cfg := &configv1.KubeSchedulerConfiguration{}
	if err := decodeStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	if want := configv1.SchemeGroupVersion.String(); cfg.APIVersion != want || cfg.Kind != "KubeSchedulerConfiguration" {
		return nil, fmt.Errorf("%s: want a %s KubeSchedulerConfiguration, found %q %q", path, want, cfg.APIVersion, cfg.Kind)
	}
	return cfg, nil
}

// WriteSchedulerConfig writes cfg to path as YAML, readable only by its
// owner (it names a kubeconfig).
func WriteSchedulerConfig(cfg *configv1.KubeSchedulerConfiguration, path string) error {
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("encoding scheduler config: %w", err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		return fmt.Errorf("writing scheduler config: %w", err)
	}
	return nil
}

// RewriteSchedulerConfig reads the configuration at src, applies ch and
// writes the result to dst.
func RewriteSchedulerConfig(src, dst string, ch SchedulerConfigChanges) error {
	cfg, err := ReadSchedulerConfig(src)
	if err != nil {
		return err
	}
	if err := ch.Apply(cfg); err != nil {
		return fmt.Errorf("rewriting %s: %w", src, err)
	}
	return WriteSchedulerConfig(cfg, dst)
}

// Apply changes cfg as ch says: client connection, leader election, plugin
// args, then the edits.
func (ch SchedulerConfigChanges) Apply(cfg *configv1.KubeSchedulerConfiguration) error {
	conn := &cfg.ClientConnection
	if ch.Kubeconfig != "" {
		conn.Kubeconfig = ch.Kubeconfig
	}
	if ch.QPS != 0 && (!ch.KeepConfiguredQPS || conn.QPS == 0) {
		conn.QPS = ch.QPS
	}
	if ch.Burst != 0 && (!ch.KeepConfiguredQPS || conn.Burst == 0) {
		conn.Burst = ch.Burst
	}

	le := &cfg.LeaderElection
	if ch.LeaderElection == nil {
		le.LeaderElect = ptr.To(false)
	} else {
		le.LeaderElect = ptr.To(true)
		le.ResourceLock = "leases"
		le.ResourceName = ch.LeaderElection.ResourceName
		le.ResourceNamespace = ch.LeaderElection.ResourceNamespace
		if le.RetryPeriod.Duration == 0 && ch.LeaderElection.DefaultRetryPeriod != 0 {
			le.RetryPeriod = metav1.Duration{Duration: ch.LeaderElection.DefaultRetryPeriod}
		}
	}

	for _, pa := range ch.PluginArgs {
		if err := MergePluginArgs(cfg, pa.Plugin, pa.Args); err != nil {
			return err
		}
	}
	for _, edit := range ch.Edits {
		if err := edit(cfg); err != nil {
			return err
		}
	}
	return nil
}

// MergePluginArgs merges args into the pluginConfig args of plugin in every
// profile, adding a pluginConfig entry where a profile has none. Nested maps
// are merged key by key; any other value replaces the existing one. The
// plugin decodes (and validates) the result when the scheduler starts.
func MergePluginArgs(cfg *configv1.KubeSchedulerConfiguration, plugin string, args map[string]any) error {
	if len(cfg.Profiles) == 0 {
		return fmt.Errorf("merging %s args: the configuration has no profiles", plugin)
	}
	for i := range cfg.Profiles {
		profile := &cfg.Profiles[i]
		found := false
		for j := range profile.PluginConfig {
			pc := &profile.PluginConfig[j]
			if pc.Name != plugin {
				continue
			}
			found = true
			existing := map[string]any{}
			if raw := pc.Args.Raw; len(raw) > 0 && string(raw) != "null" {
				if err := json.Unmarshal(raw, &existing); err != nil {
					return fmt.Errorf("profile %d: %s args are not an object: %w", i, plugin, err)
				}
			} else if pc.Args.Object != nil {
				return fmt.Errorf("profile %d: %s args are a decoded object, not raw JSON", i, plugin)
			}
			if err := setArgs(&pc.Args, deepMerge(existing, args)); err != nil {
				return err
			}
		}
		if !found {
			pc := configv1.PluginConfig{Name: plugin}
			if err := setArgs(&pc.Args, deepMerge(map[string]any{}, args)); err != nil {
				return err
			}
			profile.PluginConfig = append(profile.PluginConfig, pc)
		}
	}
	return nil
}

func setArgs(ext *runtime.RawExtension, args map[string]any) error {
	raw, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("encoding plugin args: %w", err)
	}
	*ext = runtime.RawExtension{Raw: raw}
	return nil
}

// deepMerge copies src into dst, recursing where both hold maps.
func deepMerge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			dv, _ := dst[k].(map[string]any)
			if dv == nil {
				dv = map[string]any{}
			}
			dst[k] = deepMerge(dv, sv)
			continue
		}
		dst[k] = v
	}
	return dst
}

// RemovePlugin removes plugin from the enabled list of every extension
// point of every profile and drops its pluginConfig, e.g. to run Caldera's
// gangs without queue admission in front of them.
func RemovePlugin(cfg *configv1.KubeSchedulerConfiguration, plugin string) {
	for i := range cfg.Profiles {
		profile := &cfg.Profiles[i]
		if profile.Plugins != nil {
			// Every field of Plugins is an extension point's PluginSet;
			// walking them by reflection covers the points a newer
			// kube-scheduler adds.
			points := reflect.ValueOf(profile.Plugins).Elem()
			for f := range points.NumField() {
				set, ok := points.Field(f).Addr().Interface().(*configv1.PluginSet)
				if !ok {
					continue
				}
				kept := set.Enabled[:0]
				for _, p := range set.Enabled {
					if p.Name != plugin {
						kept = append(kept, p)
					}
				}
				set.Enabled = kept
			}
		}
		kept := profile.PluginConfig[:0]
		for _, pc := range profile.PluginConfig {
			if pc.Name != plugin {
				kept = append(kept, pc)
			}
		}
		profile.PluginConfig = kept
	}
}

// EditAsMap runs edit on cfg decoded as JSON-style data (maps, slices,
// strings, float64s, bools) and decodes the result back into cfg, strictly,
// for callers whose edits predate the typed configuration. A field the edit
// adds that kube-scheduler does not know is an error, as kube-scheduler
// would report it.
func EditAsMap(cfg *configv1.KubeSchedulerConfiguration, edit func(map[string]any) error) error {
	data, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	if err := edit(m); err != nil {
		return err
	}
	if data, err = json.Marshal(m); err != nil {
		return fmt.Errorf("encoding the edited configuration: %w", err)
	}
	edited := &configv1.KubeSchedulerConfiguration{}
	if err := decodeStrict(data, edited); err != nil {
		return fmt.Errorf("decoding the edited configuration: %w", err)
	}
	*cfg = *edited
	return nil
}
