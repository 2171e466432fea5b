package operator

import (
	"cmp"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/kplan-dev/kplan/examples/internal/owners"
	"github.com/kplan-dev/kplan/examples/operator/configmapset"
	"github.com/kplan-dev/kplan/examples/operator/modelserving"
	"github.com/kplan-dev/kplan/examples/operator/podwebhook"
	"github.com/kplan-dev/kplan/examples/operator/ranktables"
	"github.com/kplan-dev/kplan/examples/operator/rdmacapacity"
	"github.com/kplan-dev/kplan/ranktable"
	"github.com/kplan-dev/kplan/rdma"
)

// Options configure Setup. The zero value works.
type Options struct {
	// TemplateNamespace holds the ranktable template ConfigMaps (default
	// ranktable.DefaultTemplateNamespace).
	TemplateNamespace string
	// RanktableTimeout is how long a ranktable group may wait for its pods'
	// annotations (0: forever).
	RanktableTimeout time.Duration
	// WaitImage is the ranktable wait container's image (default
	// ranktable.DefaultWaitImage).
	WaitImage string
	// WaitTimeout makes the ranktable wait container fail after waiting that long
	// (0: it waits for ever).
	WaitTimeout time.Duration
	// SidecarImage is the ConfigMapSet reload sidecar's image (default
	// DefaultSidecarImage); pin it with a digest (see CheckImage).
	SidecarImage string
	// SidecarResources are the reload sidecar's requests and limits (default
	// podwebhook.DefaultSidecarResources).
	SidecarResources *corev1.ResourceRequirements
	// KubeVersion is the cluster version; "" asks the API server.
	KubeVersion string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// RanktableOwners are the owner kinds whose rank tables the operator keeps and
	// whose pods the webhook mounts them in (default: owners.ExampleModelServing
	// alone). The example ModelServing gets its finalizer and RanktableReady
	// condition; any other kind is read as unstructured objects and never written
	// (see ranktables.OwnerReconciler). owners.Parse reads them from flags.
	RanktableOwners []owners.Preset
	// NodeRDMACapacity, when set, runs the rdmacapacity controller with this model, keeping
	// nodes' koordinator.sh/rdma capacity from koordinator's Device objects (the
	// Device CRD must be installed).
	NodeRDMACapacity *rdma.CapacityModel
}

// DefaultSidecarImage is the reload sidecar image used when Options.SidecarImage is
// empty: an image of examples/cmd/configmapset-reload (package examples/reload),
// which writes the wanted revision's files and marks the pod current. Deployments
// pin their own build by digest (examples/config/manager/manager.yaml does, through
// ko).
const DefaultSidecarImage = "ghcr.io/kplan-dev/configmapset-reload:v0.1.0"

// Setup adds the ranktable, ConfigMapSet and ModelServing controllers to mgr and registers the pod
// mutating webhook at podwebhook.Path on its webhook server. mgr's scheme must hold
// ConfigMapSet and ModelServing (see NewScheme), and the cluster their CRDs
// (examples/config/crd). Create mgr with CacheOptions(opts) as its cache options so
// that it caches only what the operator reconciles. For every other owner kind in
// opts.RanktableOwners, Setup registers an informer in mgr's cache, which starts
// with the cache on every replica (the webhook serves on all of them): the kind's
// CRD must be installed and the operator allowed to get, list and watch it. Call
// Setup before starting mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	opts.TemplateNamespace = cmp.Or(opts.TemplateNamespace, ranktable.DefaultTemplateNamespace)
	opts.SidecarImage = cmp.Or(opts.SidecarImage, DefaultSidecarImage)
	for _, img := range []struct{ field, ref string }{{"SidecarImage", opts.SidecarImage}, {"WaitImage", opts.WaitImage}} {
		if err := CheckImage(img.ref); err != nil {
			return fmt.Errorf("operator options: %s: %w", img.field, err)
		}
	}
	resources := podwebhook.DefaultSidecarResources
	if opts.SidecarResources != nil {
		resources = *opts.SidecarResources
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.KubeVersion == "" {
		dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		v, err := dc.ServerVersion()
		if err != nil {
			return fmt.Errorf("asking the API server for its version: %w", err)
		}
		opts.KubeVersion = v.GitVersion
	}
	kinds := opts.RanktableOwners
	if len(kinds) == 0 {
		kinds = []owners.Preset{owners.ExampleModelServing}
	}
	var foreign []owners.Preset
	seen := map[schema.GroupKind]bool{}
	for _, kind := range kinds {
		if seen[kind.GVK.GroupKind()] {
			return fmt.Errorf("operator options: RanktableOwners: %s given twice", kind.GVK.GroupKind())
		}
		seen[kind.GVK.GroupKind()] = true
		if kind.GVK.GroupKind() == owners.ExampleModelServing.GVK.GroupKind() {
			rt := &ranktables.Reconciler{
				Client:            mgr.GetClient(),
				APIReader:         mgr.GetAPIReader(),
				Recorder:          mgr.GetEventRecorder("kplan-ranktable"),
				TemplateNamespace: opts.TemplateNamespace,
				Timeout:           opts.RanktableTimeout,
				Now:               opts.Now,
			}
			if err := rt.SetupWithManager(mgr); err != nil {
				return err
			}
			continue
		}
		foreign = append(foreign, kind)
		// The manager's cache keeps the kind's owners on every replica: the
		// webhook reads them there, and the controller (on the leader) watches and
		// reads them through the same informer. Registered before the manager
		// starts, the informer starts and syncs with the cache rather than on the
		// first webhook call.
		owner := &unstructured.Unstructured{}
		owner.SetGroupVersionKind(kind.GVK)
		if _, err := mgr.GetCache().GetInformer(context.Background(), owner); err != nil {
			return fmt.Errorf("ranktable owner %s: cache: %w", kind.GVK, err)
		}
		or := &ranktables.OwnerReconciler{
			Client:            mgr.GetClient(),
			APIReader:         mgr.GetAPIReader(),
			Owners:            mgr.GetCache(),
			Recorder:          mgr.GetEventRecorder("kplan-ranktable"),
			Kind:              kind,
			TemplateNamespace: opts.TemplateNamespace,
			Timeout:           opts.RanktableTimeout,
			Now:               opts.Now,
		}
		if err := or.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("ranktable owner %s: %w", kind.GVK, err)
		}
	}
	cmsPods, err := newConfigMapSetPodCache(mgr)
	if err != nil {
		return err
	}
	cs := &configmapset.Reconciler{
		Client:   podsFrom{mgr.GetClient(), cmsPods},
		Pods:     cmsPods,
		Recorder: mgr.GetEventRecorder("kplan-configmapset"),
		Now:      opts.Now,
	}
	if err := cs.SetupWithManager(mgr); err != nil {
		return err
	}
	ms := &modelserving.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("kplan-modelserving"),
		Now:      opts.Now,
	}
	if err := ms.SetupWithManager(mgr); err != nil {
		return err
	}
	if opts.NodeRDMACapacity != nil {
		nr := &rdmacapacity.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("kplan-node-rdma"), Model: *opts.NodeRDMACapacity}
		if err := nr.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	mgr.GetWebhookServer().Register(podwebhook.Path, &webhook.Admission{Handler: &podwebhook.Mutator{
		Client:            podsFrom{mgr.GetClient(), cmsPods},
		TemplateNamespace: opts.TemplateNamespace,
		WaitImage:         opts.WaitImage,
		WaitTimeout:       opts.WaitTimeout,
		SidecarImage:      opts.SidecarImage,
		SidecarResources:  resources,
		KubeVersion:       opts.KubeVersion,
		Now:               opts.Now,
		Owners:            foreign,
		OwnerCache:        mgr.GetCache(),
		APIReader:         mgr.GetAPIReader(),
	}})
	return nil
}
