// Package managedcache is a stand-in for pkg.package-operator.run/boxcutter/managedcache, written for
// upgrade-gate's integration tests (tests/tools/olm) because the Go module proxy refuses every version
// of the real module (403 Forbidden). It declares only what operator-controller v1.11.0's non-test code
// uses, so that operator-controller builds unmodified; none of it is boxcutter's code.
//
// What works: operator-controller's default Helm applier. Its TrackingCache is a no-op: Start waits for
// the manager to stop, Watch and Free succeed without doing anything, and Source never emits an event.
// What does not: the Helm applier's drift-detection watches (a change made to an installed object is
// not reverted until its ClusterExtension is reconciled for some other reason), and the Boxcutter
// applier (feature gate BoxcutterRuntime), whose reads through the cache (Get, List) fail with
// ErrUnavailable.
package managedcache

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"pkg.package-operator.run/boxcutter/machinery/types"
)

// ErrUnavailable is wrapped by every error the stand-in returns (it is types.ErrUnavailable).
var ErrUnavailable = types.ErrUnavailable

// TrackingCache watches the objects that owners (users) manage and reads them back.
type TrackingCache interface {
	client.Reader
	// Start runs the cache until ctx is done; it makes TrackingCache a manager.Runnable.
	Start(ctx context.Context) error
	// Source is a controller source for events on watched objects.
	Source(h handler.EventHandler, predicates ...predicate.Predicate) source.Source
	// Watch makes sure the given kinds are watched on behalf of user.
	Watch(ctx context.Context, user client.Object, gvks sets.Set[schema.GroupVersionKind]) error
	// Free drops what user made the cache watch.
	Free(ctx context.Context, user client.Object) error
}

// NewTrackingCache returns the stand-in's no-op TrackingCache; config and options are not used.
func NewTrackingCache(log logr.Logger, config *rest.Config, options cache.Options) (TrackingCache, error) {
	return &noopTrackingCache{log: log}, nil
}

type noopTrackingCache struct {
	log logr.Logger
}

// Start blocks until ctx is done and returns nil.
func (c *noopTrackingCache) Start(ctx context.Context) error {
	c.log.Info("boxcutter stand-in: tracking cache is a no-op; drift-detection watches are disabled")
	<-ctx.Done()
	return nil
}

// Source returns a source that starts without error and never emits events.
func (*noopTrackingCache) Source(handler.EventHandler, ...predicate.Predicate) source.Source {
	return source.Func(func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		return nil
	})
}

// Watch does nothing and returns nil.
func (*noopTrackingCache) Watch(context.Context, client.Object, sets.Set[schema.GroupVersionKind]) error {
	return nil
}

// Free does nothing and returns nil.
func (*noopTrackingCache) Free(context.Context, client.Object) error {
	return nil
}

// Get returns an error wrapping ErrUnavailable.
func (*noopTrackingCache) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return fmt.Errorf("boxcutter TrackingCache.Get %s: %w", key, ErrUnavailable)
}

// List returns an error wrapping ErrUnavailable.
func (*noopTrackingCache) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return fmt.Errorf("boxcutter TrackingCache.List: %w", ErrUnavailable)
}
