package kubectlcaldera

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
)

// readJob turns a job file into what the API server would hold: a Job's
// first pods owned by it, objects that schedule nothing left out, kinds
// whose pods it cannot predict refused.
func TestReadJob(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, file string
		pods       []string
		ignored    string
		err        string
	}{{
		name: "indexed job with a service",
		file: `apiVersion: v1
kind: Service
metadata: {name: svc}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  parallelism: 3
  completions: 2
  completionMode: Indexed
  template:
    metadata:
      annotations: {scheduling.caldera.dev/gang-min-member: "2"}
    spec:
      schedulerName: caldera-scheduler
      containers: [{name: c, image: x}]
`,
		pods:    []string{"train-0", "train-1"},
		ignored: "Service/svc",
	}, {
		name: "bare pod and an operator's resource",
		file: `apiVersion: v1
kind: Pod
metadata: {name: p, namespace: other}
spec: {containers: [{name: c, image: x}]}
---
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: r}
`,
		pods:    []string{"p"},
		ignored: "RayCluster/r",
	}, {
		name: "deployment refused",
		file: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {a: b}}
  template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: x}]}}
`,
		err: "holds a Deployment",
	}, {
		name: "nothing to schedule",
		file: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
		err:  "no Pod or Job",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			job, err := readJob(strings.NewReader(tc.file), "ns", now)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range job.pods {
				names = append(names, p.Name)
				if p.UID == "" || !p.CreationTimestamp.Time.Equal(now) || p.Spec.SchedulerName == "" || p.Status.Phase != "Pending" {
					t.Errorf("pod %s not as the API server would hold it: %+v", p.Name, p.ObjectMeta)
				}
				if o := p.OwnerReferences; len(o) > 0 && (o[0].Kind != "Job" || p.Labels[batchv1.JobNameLabel] != o[0].Name) {
					t.Errorf("pod %s: owner %+v, labels %v", p.Name, o, p.Labels)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.pods, ",") {
				t.Errorf("pods %v, want %v", names, tc.pods)
			}
			if strings.Join(job.ignored, ",") != tc.ignored {
				t.Errorf("ignored %v, want %s", job.ignored, tc.ignored)
			}
		})
	}
}
