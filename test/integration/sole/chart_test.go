package sole_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/status"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// spreadScheduler is the chart's spread profile.
const spreadScheduler = "caldera-scheduler-spread"

// TestChartCoschedulingProfile renders the chart with the spread profile's
// CalderaEnqueue toggled off (a Coscheduling-like profile: gangs, no
// queues) and runs the real scheduler on it. Beside the batch profile, which
// still holds a gang its queue has no room for, the same gang in the
// Coscheduling-like profile binds at once: no queue admission. It is still
// all or nothing: a gang larger than the cluster binds no member. In that
// profile CalderaReclaim, which plans only for admitted gangs, gave way to
// upstream's DefaultPreemption.
func TestChartCoschedulingProfile(t *testing.T) {
	env := harness.Start(t)
	config := chartConfig(t, env.RepoRoot, "--set", "profiles.spread.plugins.CalderaEnqueue=false")
	cfg := readMap(t, config)
	for _, p := range cfg["profiles"].([]any) {
		p := p.(map[string]any)
		if p["schedulerName"] != spreadScheduler {
			continue
		}
		plugins, _ := yaml.Marshal(p)
		for _, gone := range []string{"CalderaEnqueue", "CalderaReclaim", "DefaultPreemption"} {
			if strings.Contains(string(plugins), gone) {
				t.Errorf("the Coscheduling-like profile still names %s:\n%s", gone, plugins)
			}
		}
	}
	env.AddNodes(t, 2, "4", "8Gi")
	env.CreateQueue(t, "tiny", qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}})
	env.StartScheduler(t, harness.WithConfigFile(config))
	ns := env.Namespace(t)
	inTiny := map[string]string{qapi.QueueLabel: "tiny"}

	gang := func(name, scheduler, cpu string, size int) []string {
		pg := harness.PodGroup(ns, name, int32(size))
		pg.Labels = inTiny
		env.CreatePodGroup(t, pg)
		var names []string
		for _, m := range harness.Members(ns, name, size, cpu) {
			m.Spec.SchedulerName = scheduler
			env.CreatePod(t, m)
			names = append(names, m.Name)
		}
		return names
	}
	held := gang("held", harness.DefaultSchedulerName, "1", 3)
	cos := gang("cos", spreadScheduler, "1", 3)
	env.WaitBound(t, ns, timeout, cos...)
	for _, m := range held {
		harness.WaitFor(t, timeout, func() (bool, error) {
			p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), m, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := scheduledCondition(p)
			return p.Spec.NodeName == "" && c != nil && c.Reason == status.ReasonWaitingForAdmission, nil
		}, m+" of the batch profile to wait for admission to queue tiny")
	}

	big := gang("big", spreadScheduler, "4", 3) // 12 CPUs of a cluster of 8
	for _, m := range big {
		env.WaitUnschedulable(t, ns, m, timeout)
	}
	if n := env.BoundPods(t, ns, "scheduling.x-k8s.io/pod-group=big"); n != 0 {
		t.Errorf("%d members of gang big bound, want none", n)
	}
}

// chartConfig renders charts/caldera with the repository's pinned helm and
// setArgs, and writes its KubeSchedulerConfiguration to a file.
func chartConfig(t *testing.T, root string, setArgs ...string) string {
	t.Helper()
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	args := append([]string{"tool", "-modfile=hack/helm/go.mod", "helm", "template", "caldera", "charts/caldera", "--namespace", "caldera-system"}, setArgs...)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template %s: %v\n%s", strings.Join(setArgs, " "), err, stderr.String())
	}
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			t.Fatal("the chart renders no ConfigMap with config.yaml")
		}
		if err != nil {
			t.Fatal(err)
		}
		var obj struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatal(err)
		}
		if cfg, ok := obj.Data["config.yaml"]; ok && obj.Kind == "ConfigMap" {
			path := filepath.Join(t.TempDir(), "chart-config.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
}
