declare module 'kubewasm:reconciler/types@0.2.0' {
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
   * A kind whose changes the plugin's `handler` receives, object by object.
   */
  export interface Watch {
    /**
     * The kind: any built-in kind or custom resource the API server serves.
     */
    kind: KindRef,
    /**
     * Only objects whose labels match this selector, in Kubernetes' text form
     * (`app=web,tier notin (db)`); `none`: every object.
     */
    labelSelector?: string,
    /**
     * Only objects whose fields match this selector, in Kubernetes' text form
     * (`metadata.name=web`); `none`: every object.
     */
    fieldSelector?: string,
  }
  /**
   * A write the API server asks an admission webhook about.
   * # Variants
   * 
   * ## `"create"`
   * 
   * ## `"update"`
   * 
   * ## `"delete"`
   * 
   * ## `"connect"`
   * 
   * `kubectl exec`, `attach`, `port-forward` and proxy requests.
   */
  export type Operation = 'create' | 'update' | 'delete' | 'connect';
  /**
   * The writes of one kind an admission export is asked about.
   */
  export interface AdmissionRule {
    /**
     * The kind: the parent or any other (a Kubewarden-style policy). The API server
     * asks about writes of every version of its group and resource, converted to
     * this version.
     */
    kind: KindRef,
    /**
     * The operations; empty: `create` and `update`.
     */
    operations: Array<Operation>,
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
     * `none` for a plugin that only handles events: then `children`, `related` and
     * `finalizer` must be empty, and `watches` must not be.
     */
    parent?: KindRef,
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
    /**
     * Kinds whose added, updated and deleted objects `handler.handle` receives, in
     * all namespaces or the one the plugin's settings name. Empty: `handle` is never
     * called.
     */
    watches: Array<Watch>,
    /**
     * The URLs the plugin needs to reach through `http.send` (or `wasi:http`), in
     * Spin's `allowed_outbound_hosts` syntax: `scheme://host[:port]`, where `*` may
     * stand for the scheme, the port or the whole host, a host may be `*.domain`
     * (any subdomain), an IP address or a CIDR range, and a port a range `a..b` (end
     * excluded); no path. Examples: `https://hooks.slack.com`,
     * `http://*.svc.cluster.local:8080`, `*://*:*` (anything). The operator grants
     * them, or fewer, in the plugin's settings: a request is sent only when both this
     * list and the grant allow its URL.
     */
    outbound: Array<string>,
    /**
     * Child kinds whose observed children a response may leave out: those it omits
     * are kept, not deleted (a CronJob's running Jobs). Each must be among
     * `children`. Children of the other kinds that a response omits are deleted.
     */
    keepUnlisted: Array<KindRef>,
    /**
     * The writes `admission.default` may change before the API server stores them
     * (a mutating webhook; Kubebuilder's defaulter). Empty: `default` is never called.
     */
    defaults: Array<AdmissionRule>,
    /**
     * The writes `admission.validate` may refuse (a validating webhook, called after
     * the defaults and the schema). Empty: `validate` is never called.
     */
    validates: Array<AdmissionRule>,
    /**
     * Whether `admission.convert` converts the parent between the versions its CRD
     * (among `crds`) serves: the host registers itself as that CRD's conversion
     * webhook. The parent must be a kind the plugin defines.
     */
    converts: boolean,
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
     * controls that are not in this list are deleted, but for those of the kinds
     * the manifest keeps unlisted (which `delete` deletes). The host adds the
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
    /**
     * The `metadata.uid`s of observed children to delete, of any child kind: the
     * way to delete a child of a kind the manifest keeps unlisted (a CronJob's
     * finished Jobs beyond its history limit). Each must be a child the parent
     * controls, as the request shows it, and not also among `children`.
     */
    'delete': Array<string>,
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
  /**
   * What happened to a watched object.
   * # Variants
   * 
   * ## `"added"`
   * 
   * The object appeared (created, or first seen).
   * ## `"updated"`
   * 
   * The object changed: a new resourceVersion.
   * ## `"deleted"`
   * 
   * The object is gone.
   */
  export type Change = 'added' | 'updated' | 'deleted';
  /**
   * One change of one watched object, as `handler.handle` receives it.
   * 
   * Changes of one object arrive in the order they happened, one at a time: the
   * next is delivered only once `handle` has accepted this one. Changes of different
   * objects may be delivered in parallel, each in its own instance.
   */
  export interface ObjectEvent {
    change: Change,
    /**
     * The object's kind, as the manifest's `watches` names it.
     */
    kind: KindRef,
    /**
     * The object now (`added`, `updated`) or as last known (`deleted`), JSON,
     * without `managedFields`.
     */
    object: string,
    /**
     * `updated`: the object before the change, JSON. After a host restart only its
     * metadata (namespace, name, uid, resourceVersion) is known.
     */
    oldObject?: string,
    /**
     * The object existed before the plugin was first loaded: delivered (as `added`)
     * only when the plugin's settings ask for initial objects (`[events] initial`).
     */
    initial: boolean,
    /**
     * `deleted`: the deletion was noticed by a relist or a host restart, not by the
     * watch; `object` is its last known state and may be stale.
     */
    finalStateUnknown: boolean,
    /**
     * `<uid>:<resourceVersion>:<change>`: the same on every retry of this delivery
     * and after a host restart, so that a receiver can drop duplicates.
     */
    deliveryId: string,
    /**
     * 1 on the first delivery, counting up on retries.
     */
    attempt: number,
    /**
     * The host's current time, RFC 3339, so that plugins need no clock.
     */
    now: string,
    /**
     * The plugin's settings from its operator configuration, JSON (`null` if none),
     * Secret references resolved.
     */
    config: string,
  }
  /**
   * Who asks for a write, as the API server authenticated them.
   */
  export interface UserInfo {
    username: string,
    uid: string,
    groups: Array<string>,
    /**
     * Extra attributes of the authenticator (scopes...), with their values.
     */
    extra: Array<[string, Array<string>]>,
  }
  /**
   * One write the API server asks about, from its AdmissionReview.
   */
  export interface AdmissionRequest {
    /**
     * The AdmissionReview's uid: the same for every webhook one write calls.
     */
    uid: string,
    /**
     * The kind of the object, in the version the rule names.
     */
    kind: KindRef,
    operation: Operation,
    /**
     * The subresource written (`status`, `scale`); `none` for the object itself.
     */
    subResource?: string,
    /**
     * `none` for a cluster-scoped object.
     */
    namespace?: string,
    /**
     * Empty on a create whose name the server generates (`generateName`).
     */
    name: string,
    /**
     * The object as it would be stored, JSON; `none` for `delete`.
     */
    object?: string,
    /**
     * The stored object, JSON: `update` and `delete`.
     */
    oldObject?: string,
    userInfo: UserInfo,
    /**
     * The write is a dry run: nothing will be stored, and the plugin must change
     * nothing outside its answer (it cannot anyway).
     */
    dryRun: boolean,
    /**
     * The write's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`), JSON;
     * `null` if none.
     */
    options: string,
    /**
     * The host's current time, RFC 3339.
     */
    now: string,
    /**
     * The plugin's settings from its operator configuration, JSON (`null` if none).
     */
    config: string,
  }
  /**
   * One field a denial blames, as the API server's `Invalid` errors list them.
   */
  export interface FieldCause {
    /**
     * The field's path, e.g. `spec.schedule` or `metadata.name`.
     */
    field: string,
    /**
     * Why, e.g. `must be no more than 52 characters`.
     */
    message: string,
    /**
     * Kubernetes' cause type: `FieldValueInvalid`, `FieldValueRequired`,
     * `FieldValueNotSupported`, `FieldValueForbidden`...; empty: `FieldValueInvalid`.
     */
    reason: string,
  }
  /**
   * Why a write is refused. With `causes`, the API server answers 422 Invalid naming
   * the fields (as for a schema violation); without, 403 Forbidden with the message.
   */
  export interface Denial {
    message: string,
    causes: Array<FieldCause>,
  }
  /**
   * What validation decided about a write.
   */
  export interface Verdict {
    /**
     * `none`: allowed.
     */
    denied?: Denial,
    /**
     * Shown to the client (`kubectl` prints them as `Warning: ...`), allowed or not.
     */
    warnings: Array<string>,
  }
  /**
   * How defaulting changes a written object.
   */
  export type Mutation = MutationUnchanged | MutationObject | MutationPatch;
  /**
   * Store it as written.
   */
  export interface MutationUnchanged {
    tag: 'unchanged',
  }
  /**
   * The whole object as it should be stored, JSON: the host sends the API server
   * the JSON patch from the written object to this one.
   */
  export interface MutationObject {
    tag: 'object',
    val: string,
  }
  /**
   * An RFC 6902 JSON patch to the written object, JSON.
   */
  export interface MutationPatch {
    tag: 'patch',
    val: string,
  }
  /**
   * What defaulting did to a written object.
   */
  export interface Defaulted {
    mutation: Mutation,
    /**
     * Shown to the client, as `verdict`'s.
     */
    warnings: Array<string>,
  }
  /**
   * Objects of the parent's kind to convert, from the API server's ConversionReview.
   */
  export interface ConversionRequest {
    /**
     * The objects, JSON, each in its own version (they may differ).
     */
    objects: Array<string>,
    /**
     * `group/version` to convert every object to.
     */
    desiredApiVersion: string,
    /**
     * The host's current time, RFC 3339.
     */
    now: string,
    /**
     * The plugin's settings from its operator configuration, JSON (`null` if none).
     */
    config: string,
  }
}
