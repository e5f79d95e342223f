// Package kubectlcaldera is the kubectl-caldera command: read-only views of
// Caldera's queues and jobs for users and operators. It works as a kubectl plugin
// (kubectl caldera ...) and on its own with --kubeconfig; it never writes.
package kubectlcaldera

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	"sigs.k8s.io/yaml"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
)

// options are the flags every subcommand shares.
type options struct {
	kubeconfig, context string
	output              string
}

// NewCommand returns the kubectl-caldera command writing to out.
func NewCommand(out io.Writer) *cobra.Command {
	o := &options{}
	root := &cobra.Command{
		Use:   "kubectl-caldera",
		Short: "Read-only views of Caldera's queues and jobs",
		Long: `kubectl-caldera shows what Caldera's scheduler decided, from the objects
it writes (Queue and PodGroup status, annotations, Events). Run it as
"kubectl caldera ..." with the binary on your PATH, or on its own with
--kubeconfig.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	fs := root.PersistentFlags()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&o.context, "context", "", "the kubeconfig context to use")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	root.AddCommand(newQueuesCommand(o), newJobsCommand(o), newExplainCommand(o), newWhatIfCommand(o))
	return root
}

// config loads the client configuration and the context's namespace
// from the flags, the way kubectl loads them.
func (o *options) config() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: o.context})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	return cfg, ns, nil
}

// jsonOnly is cfg for custom resources, which are served as JSON only.
func jsonOnly(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	return cfg
}

// clientSet is the three clients the job commands read with.
type clientSet struct {
	kube     kubernetes.Interface
	podGroup pgclient.Interface
	queue    qclient.Interface
}

// allClients builds the core, PodGroup and Queue clients from the flags,
// with the kubeconfig context's namespace.
func (o *options) allClients() (clientSet, string, error) {
	cfg, ns, err := o.config()
	if err != nil {
		return clientSet{}, "", err
	}
	var cs clientSet
	if cs.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return cs, "", err
	}
	if cs.podGroup, err = pgclient.NewForConfig(jsonOnly(cfg)); err != nil {
		return cs, "", err
	}
	if cs.queue, err = qclient.NewForConfig(jsonOnly(cfg)); err != nil {
		return cs, "", err
	}
	return cs, ns, nil
}

// clients builds the Queue client from the flags.
func (o *options) clients() (qclient.Interface, error) {
	cfg, _, err := o.config()
	if err != nil {
		return nil, err
	}
	return qclient.NewForConfig(jsonOnly(cfg))
}

// checkOutput refuses an unknown --output before anything is listed.
func (o *options) checkOutput() error {
	switch o.output {
	case "table", "json", "yaml":
		return nil
	}
	return fmt.Errorf("unknown output format %q: use table, json or yaml", o.output)
}

// printStructured prints rows as JSON or YAML when format asks for one;
// false for a table, which each command prints itself.
func printStructured(w io.Writer, rows any, format string) (bool, error) {
	var data []byte
	var err error
	switch format {
	case "json":
		data, err = json.MarshalIndent(rows, "", "  ")
		data = append(data, '\n')
	case "yaml":
		data, err = yaml.Marshal(rows)
	default:
		return false, nil
	}
	if err != nil {
		return true, err
	}
	_, err = w.Write(data)
	return true, err
}
