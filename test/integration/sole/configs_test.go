package sole_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/caldera-sched/caldera/internal/localcluster"
)

// shippedDefaultProfile is the one profile the sole-scheduler configuration
// adds: upstream's defaults with the queue sort all profiles must share and
// CalderaGang's barrier for gangs whose pods name no scheduler.
const shippedDefaultProfile = `
schedulerName: default-scheduler
plugins:
  queueSort:
    enabled:
      - name: CalderaQueueSort
    disabled:
      - name: PrioritySort
  preEnqueue:
    enabled:
      - name: CalderaGang
  preFilter:
    enabled:
      - name: CalderaGang
  postFilter:
    enabled:
      - name: CalderaGang
  reserve:
    enabled:
      - name: CalderaGang
  permit:
    enabled:
      - name: CalderaGang
`

// TestShippedConfigsAgree: the sole-scheduler configuration is
// manifests/scheduler/config.yaml with the Lease kube-scheduler and the
// default profile last, and nothing else; kubeadm's is the sole one plus
// the kubeconfig kubeadm writes for the scheduler (compared as data, so
// comments and layout may differ); each shipped file decodes strictly, as
// kube-scheduler reads it.
func TestShippedConfigsAgree(t *testing.T) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	shipped := filepath.Join(root, "manifests", "scheduler", "config.yaml")
	sole := filepath.Join(root, "manifests", "components", "sole-scheduler", "config.yaml")
	kubeadm := filepath.Join(root, "manifests", "kubeadm", "caldera-scheduler.yaml")
	for _, f := range []string{shipped, sole, kubeadm} {
		if _, err := localcluster.ReadSchedulerConfig(f); err != nil {
			t.Errorf("%s does not decode strictly: %v", f, err)
		}
	}

	base, soleCfg, kubeadmCfg := readMap(t, shipped), readMap(t, sole), readMap(t, kubeadm)
	want := readMap(t, sole)
	want["clientConnection"] = map[string]any{"kubeconfig": "/etc/kubernetes/scheduler.conf"}
	if !reflect.DeepEqual(kubeadmCfg, want) {
		a, _ := yaml.Marshal(kubeadmCfg)
		b, _ := yaml.Marshal(want)
		t.Errorf("%s differs from %s plus clientConnection.kubeconfig:\n%s\nwant\n%s", kubeadm, sole, a, b)
	}

	le := soleCfg["leaderElection"].(map[string]any)
	if le["resourceName"] != "kube-scheduler" || le["resourceNamespace"] != "kube-system" {
		t.Errorf("the sole configuration's Lease is %v/%v, want kube-system/kube-scheduler", le["resourceNamespace"], le["resourceName"])
	}
	le["resourceName"] = base["leaderElection"].(map[string]any)["resourceName"]
	profiles := soleCfg["profiles"].([]any)
	var def map[string]any
	if err := yaml.Unmarshal([]byte(shippedDefaultProfile), &def); err != nil {
		t.Fatal(err)
	}
	if last := profiles[len(profiles)-1]; !reflect.DeepEqual(last, def) {
		t.Errorf("the sole configuration's last profile is\n%v\nwant\n%v", last, def)
	}
	soleCfg["profiles"] = profiles[:len(profiles)-1]
	if !reflect.DeepEqual(soleCfg, base) {
		a, _ := yaml.Marshal(soleCfg)
		b, _ := yaml.Marshal(base)
		t.Errorf("%s, without its Lease name and default profile, differs from %s:\n%s\nwant\n%s", sole, shipped, a, b)
	}
}

// readMap decodes a YAML file as data.
func readMap(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return m
}

// TestKubeadmStaticPod: the static pod decodes strictly as a Pod, and every
// file the scheduler reads (its --config, the config's kubeconfig, the
// authentication and authorization kubeconfigs) is a file mounted from the
// host, read-only.
func TestKubeadmStaticPod(t *testing.T) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "manifests", "kubeadm", "kube-scheduler.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{}
	if err := yaml.UnmarshalStrict(data, pod); err != nil {
		t.Fatalf("kube-scheduler.yaml: %v", err)
	}
	if pod.Name != "kube-scheduler" || pod.Namespace != "kube-system" || pod.Labels["component"] != "kube-scheduler" || !pod.Spec.HostNetwork {
		t.Errorf("the static pod is not shaped like kubeadm's: %s/%s labels %v hostNetwork %v", pod.Namespace, pod.Name, pod.Labels, pod.Spec.HostNetwork)
	}
	hostFiles := map[string]string{} // mount path -> host path
	volumes := map[string]*v1.HostPathVolumeSource{}
	for _, v := range pod.Spec.Volumes {
		volumes[v.Name] = v.HostPath
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("the static pod has %d containers, want 1", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	for _, m := range c.VolumeMounts {
		if hp := volumes[m.Name]; hp != nil && m.ReadOnly {
			hostFiles[m.MountPath] = hp.Path
		}
	}
	cfg := readMap(t, filepath.Join(root, "manifests", "kubeadm", "caldera-scheduler.yaml"))
	read := []string{cfg["clientConnection"].(map[string]any)["kubeconfig"].(string)}
	for _, a := range c.Args {
		for _, flag := range []string{"--config=", "--authentication-kubeconfig=", "--authorization-kubeconfig="} {
			if path, ok := strings.CutPrefix(a, flag); ok {
				read = append(read, path)
			}
		}
	}
	if len(read) != 4 {
		t.Fatalf("the static pod reads %v, want the config, its kubeconfig and the two delegated kubeconfigs", read)
	}
	for _, path := range read {
		if hostFiles[path] != path {
			t.Errorf("%s is not mounted read-only from the host's %s (mounts: %v)", path, path, hostFiles)
		}
	}
}
