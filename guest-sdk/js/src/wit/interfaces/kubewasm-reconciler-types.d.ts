declare module 'kubewasm:reconciler/types@0.1.0' {
  /**
   * A Kubernetes kind and the REST resource that serves it.
   */
  export interface KindRef {
    /**
     * API group; empty for the core group (Pods, Services, ConfigMaps...).
     */
    group: string,
    /**
     * API version within the group, e.g. `v1`, `v1beta1`.
     */
    version: string,
    /**
     * Kind, e.g. `Deployment`.
     */
    kind: string,
    /**
     * Plural resource name, e.g. `deployments`: used for RBAC and REST paths.
     */
    plural: string,
    /**
     * Whether objects of this kind live in a namespace.
     */
    namespaced: boolean,
  }
  /**
   * Default sandbox limits the plugin asks for; the operator's configuration may
   * lower them, never raise them.
   */
  export interface Limits {
    /**
     * CPU deadline for one call, in milliseconds.
     */
    deadlineMs?: number,
    /**
     * Largest linear memory the plugin may grow to, in MiB.
     */
    memoryMib?: number,
  }
  /**
   * What a plugin is: returned once by `describe`, when the host loads it.
   */
  export interface Manifest {
    /**
     * The plugin's name: lower-case DNS label. The host's field manager is
     * `kubewasm.<name>` and its finalizer `kubewasm.io/<name>`.
     */
    name: string,
    /**
     * The kind this plugin reconciles: one reconcile per object of this kind.
     */
    parent: KindRef,
    /**
     * The kinds the plugin may create and own. This is an allow-list: a response
     * holding any other kind is refused and nothing is written.
     */
    children: Array<KindRef>,
    /**
     * Kinds the plugin reads but does not own (see `related`).
     */
    related: Array<KindRef>,
    /**
     * Whether the plugin needs a last call before its parent is deleted.
     */
    finalizer: boolean,
    /**
     * CustomResourceDefinitions the plugin defines, each as YAML or JSON text.
     */
    crds: Array<string>,
    /**
     * Default sandbox limits.
     */
    limits: Limits,
  }
  /**
   * How a set-based label requirement compares a label's value.
   * # Variants
   * 
   * ## `"in"`
   * 
   * The label's value is one of `values`.
   * ## `"not-in"`
   * 
   * The label is absent or its value is none of `values`.
   * ## `"exists"`
   * 
   * The label is present, whatever its value.
   * ## `"does-not-exist"`
   * 
   * The label is absent.
   */
  export type LabelOperator = 'in' | 'not-in' | 'exists' | 'does-not-exist';
  /**
   * One requirement of a Kubernetes label selector.
   */
  export interface LabelRequirement {
    key: string,
    operator: LabelOperator,
    /**
     * Values for `in` and `not-in`; empty otherwise.
     */
    values: Array<string>,
  }
  /**
   * Which objects of a kind a related query selects.
   */
  export type Selector = SelectorAll | SelectorNames | SelectorLabels;
  /**
   * Every object of the kind in the query's namespace.
   */
  export interface SelectorAll {
    tag: 'all',
  }
  /**
   * Objects with exactly these names.
   */
  export interface SelectorNames {
    tag: 'names',
    val: Array<string>,
  }
  /**
   * Objects whose labels satisfy every requirement.
   */
  export interface SelectorLabels {
    tag: 'labels',
    val: Array<LabelRequirement>,
  }
  /**
   * Related objects a plugin wants to see for one parent. The host serves them from
   * its caches and reconciles the parent again whenever a matching object changes.
   */
  export interface Query {
    /**
     * The kind; it must be one of the manifest's `related` kinds.
     */
    kind: KindRef,
    /**
     * Namespace to look in; `none` means all namespaces (or a cluster-scoped kind).
     */
    namespace?: string,
    selector: Selector,
  }
  /**
   * Everything a plugin needs to decide, for one parent.
   */
  export interface Request {
    /**
     * The parent object, JSON.
     */
    parent: string,
    /**
     * The children that exist now and are controlled by this parent (all kinds),
     * JSON, without `managedFields`.
     */
    children: Array<string>,
    /**
     * The objects selected by the plugin's related queries, JSON.
     */
    related: Array<string>,
    /**
     * True when the parent is being deleted and waits on this plugin's finalizer.
     */
    finalizing: boolean,
    /**
     * The host's current time, RFC 3339, so that plugins need no clock.
     */
    now: string,
    /**
     * The plugin's settings from its operator configuration, JSON (`null` if none).
     */
    config: string,
  }
  /**
   * Whether an event is routine or calls for attention.
   * # Variants
   * 
   * ## `"normal"`
   * 
   * ## `"warning"`
   */
  export type EventType = 'normal' | 'warning';
  /**
   * A Kubernetes Event the host records on the parent.
   */
  export interface Event {
    type: EventType,
    /**
     * UpperCamelCase machine-readable cause, e.g. `DeploymentExists`.
     */
    reason: string,
    /**
     * Human-readable explanation.
     */
    message: string,
  }
  /**
   * The plugin's decision for one parent.
   */
  export interface Response {
    /**
     * The FULL desired set of children, JSON. Observed children the parent
     * controls that are not in this list are deleted. The host adds the
     * controller ownerReference; the plugin need not.
     */
    children: Array<string>,
    /**
     * The desired `.status` of the parent, JSON; `none` leaves status alone.
     */
    status?: string,
    /**
     * Labels to set on the parent. Labels set by an earlier response and
     * missing from this one are removed.
     */
    labels: Array<[string, string]>,
    /**
     * Annotations to set on the parent, with the same semantics as `labels`.
     */
    annotations: Array<[string, string]>,
    /**
     * Reconcile this parent again after this many milliseconds, even if
     * nothing changes.
     */
    requeueAfterMs?: bigint,
    /**
     * Events to record on the parent.
     */
    events: Array<Event>,
    /**
     * When finalizing: true lets the host remove its finalizer so deletion
     * proceeds. Ignored otherwise.
     */
    finalized: boolean,
  }
  /**
   * Why a reconcile could not produce a decision.
   */
  export interface ReconcileError {
    message: string,
    /**
     * Whether trying again later may succeed (the host backs off and retries).
     */
    retryable: boolean,
  }
}
