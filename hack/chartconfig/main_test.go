package main

import (
	"slices"
	"strings"
	"testing"
)

const shipped = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: a # comment
    pluginConfig:
      - name: CalderaEnqueue
        args:
          overcommitFactor: 1.2
          admitSingletons: true
`

func TestCompare(t *testing.T) {
	tests := []struct {
		name, chart string
		want        []string
	}{
		{"same data, other layout", `kind: KubeSchedulerConfiguration
apiVersion: "kubescheduler.config.k8s.io/v1"
profiles:
- pluginConfig:
  - args: {admitSingletons: true, overcommitFactor: 1.2}
    name: CalderaEnqueue
  schedulerName: "a"
`, nil},
		{"changed, missing and extra values", `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: a
    pluginConfig:
      - name: CalderaEnqueue
        args:
          overcommitFactor: 1.5
          checkResourceQuota: true
`, []string{
			`profiles[0].pluginConfig[0].args.admitSingletons: missing from the chart (shipped: true)`,
			`profiles[0].pluginConfig[0].args.checkResourceQuota: only in the chart (true)`,
			`profiles[0].pluginConfig[0].args.overcommitFactor: chart 1.5, shipped 1.2`,
		}},
		{"a list of another length", `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles: []
`, []string{`profiles: chart [], shipped [{"pluginConfig":[{"args":{"admitSingletons":true,"overcommitFactor":1.2},"name":"CalderaEnqueue"}],"schedulerName":"a"}]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := compare([]byte(tt.chart), []byte(shipped))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("compare =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestRenderedConfig(t *testing.T) {
	stream := `---
# Source: caldera/templates/rbac.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: caldera
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: caldera-config
data:
  config.yaml: |
    kind: KubeSchedulerConfiguration
`
	got, err := renderedConfig(strings.NewReader(stream))
	if err != nil || string(got) != "kind: KubeSchedulerConfiguration\n" {
		t.Errorf("renderedConfig = %q, %v", got, err)
	}
	if _, err := renderedConfig(strings.NewReader("apiVersion: v1\nkind: ServiceAccount\n")); err == nil {
		t.Error("renderedConfig found a config.yaml in a stream without a ConfigMap")
	}
}
