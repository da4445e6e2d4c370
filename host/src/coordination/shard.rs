//! Sharding: the replicas of one group split the parents between them, so that N
//! replicas reconcile about 1/N of the parents each.
//!
//! Each replica (a *member*) holds its own `coordination.k8s.io/v1` Lease, labelled
//! with the group, and renews it every retry period. What the members split are
//! [`Bucket`]s: every parent falls in one of 1024, by a hash of its kind, namespace and
//! name, and a bucket belongs to the live member that a rendezvous hash picks, so a
//! member joining or leaving moves only the buckets it takes or gives up.
//!
//! Each parent carries its bucket as the label [`BUCKET_LABEL`], and so does each child
//! the host writes for it, so that a member's watches select only its own buckets
//! ([`Shard::selection`]) and its caches hold about 1/N of the objects. A member's
//! selection follows the view it publishes; the parents its selection holds but it does
//! not own (for the moment a view changes) return from their reconcile at once.
//!
//! Membership is seen differently by each replica for a moment, so ownership alone
//! could let two replicas reconcile one parent. What prevents it: every member
//! publishes in its Lease the *view* (the set of members) it hashes over, and
//!
//! - a member reconciles a parent only if its own published view gives it the parent
//!   and no other live member's published view gives that member the parent, judged
//!   on a list of the Leases read *after* its own view was written: of two members
//!   claiming a parent, the one that wrote later reads the other's claim and keeps
//!   off (the argument of Dekker's mutual exclusion, over the API server's
//!   linearizable reads and writes);
//! - before publishing a view that gives parents away, a member stops admitting
//!   reconciles of them and waits for the ones in flight to finish.
//!
//! A member is live while its Lease changes within its lease duration, measured on
//! the observer's own clock, as in leader election (see [`super::leader`]). A member
//! that cannot renew for two thirds of its lease duration stops reconciling, before
//! anyone may take its parents over; one that stops cleanly deletes its Lease, so the
//! others take over at their next round instead of waiting for it to expire.
//!
//! ```no_run
//! # async fn example(client: kube::Client) -> Result<(), kubewasm::coordination::Error> {
//! use std::time::Duration;
//! use kubewasm::coordination::shard::Member;
//!
//! let member = Member::new(client, "kubewasm-system", "kubewasm", "pod-a", Duration::from_secs(15));
//! let (shard, joined) = member.spawn();
//! // Hand `shard` to the controllers (controller::Options::shard); on the way out:
//! joined.leave().await?;
//! # Ok(()) }
//! ```

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Client, ResourceExt};
use tokio::sync::{OwnedRwLockReadGuard, RwLock, watch};
use tokio::time::Instant;
use tracing::{info, warn};

use super::lease::{Error, Holder, Renewal, Sightings, Task};

/// The label naming the group a member Lease belongs to.
pub const GROUP_LABEL: &str = "kubewasm.io/shard-group";
/// The annotation holding a member's published view: a JSON array of identities.
pub const VIEW_ANNOTATION: &str = "kubewasm.io/shard-view";
/// The label holding an object's [`Bucket`] (`0` to `1023`), on parents and on the
/// children the host writes for them.
pub const BUCKET_LABEL: &str = "kubewasm.io/shard-bucket";

/// What the members of a group split between them: a parent and its children fall in
/// one of [`Bucket::COUNT`] buckets. Few enough that a member's share is a label
/// selector of a few kilobytes at most, many enough that a member's share of the
/// buckets is within a few percent of 1/N (rendezvous hashing spreads them at random).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bucket(u16);

impl Bucket {
    pub const COUNT: u16 = 1024;

    /// Every bucket, in order.
    pub fn all() -> impl Iterator<Item = Self> {
        (0..Self::COUNT).map(Self)
    }

    /// The bucket of the object named `name` in `namespace` of `kind` in API `group`:
    /// its [`BUCKET_LABEL`] when that names a bucket (the label is what watches
    /// select), otherwise a hash of the four, stable across the object's deletion and
    /// creation again, and known before the API server gives it a uid.
    pub fn of(
        labels: &std::collections::BTreeMap<String, String>,
        group: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Self {
        labels.get(BUCKET_LABEL).and_then(|value| Self::parse(value)).unwrap_or_else(|| {
            let key = format!("{group}/{kind}/{}/{name}", namespace.unwrap_or_default());
            Self(u16::try_from(weight("bucket", &key) % u64::from(Self::COUNT)).unwrap_or_default())
        })
    }

    /// The bucket a label value names: a decimal number under [`Bucket::COUNT`], as
    /// [`Bucket::label`] writes it.
    pub fn parse(value: &str) -> Option<Self> {
        let n: u16 = value.parse().ok()?;
        (n < Self::COUNT && n.to_string() == value).then_some(Self(n))
    }

    /// The value of [`BUCKET_LABEL`] for this bucket.
    pub fn label(self) -> String {
        self.0.to_string()
    }
}

/// What a member's watches select: the buckets its published view gives it. A new
/// `epoch` whenever that set changes, so that caches can tell whether they have listed
/// the current one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub epoch: u64,
    /// A label selector, `None` for every object (not sharded, or every bucket).
    pub labels: Option<String>,
}

impl Selection {
    fn of(assignment: &Assignment) -> Option<String> {
        let buckets: Vec<Bucket> = match assignment {
            Assignment::Whole => return None,
            Assignment::Nothing => Vec::new(),
            Assignment::Part(p) => Bucket::all().filter(|b| owner(&p.view, *b) == Some(p.me.as_str())).collect(),
        };
        match buckets.len() {
            // No object carries this value: the watch lists nothing, and is ready.
            0 => Some(format!("{BUCKET_LABEL}=none")),
            // Every bucket: unlabelled objects too, which are the member's own all the same.
            n if n == usize::from(Bucket::COUNT) => None,
            _ => {
                let values: Vec<String> = buckets.iter().map(|b| b.label()).collect();
                Some(format!("{BUCKET_LABEL} in ({})", values.join(",")))
            }
        }
    }
}

/// Which parents this replica reconciles; shared by all its controllers.
#[derive(Clone)]
pub struct Shard(Arc<Inner>);

struct Inner {
    assignment: std::sync::RwLock<Arc<Assignment>>,
    /// Past this instant the assignment lapses, whatever it says: two thirds of a lease
    /// duration after the member's Lease was last written. Others wait a whole lease
    /// duration from when they see the write, so even a member whose task is stuck
    /// stops before anyone takes over. `None`: no limit (no sharding).
    until: std::sync::Mutex<Option<Instant>>,
    /// Held shared by every admitted reconcile, exclusively to drain them before a
    /// member gives parents away.
    turns: Arc<RwLock<()>>,
    /// Bumped whenever the assignment may have grown: the controllers then reconcile
    /// every parent, so the ones gained are picked up.
    grown: watch::Sender<u64>,
    /// What the watches select, following the published view.
    selection: watch::Sender<Selection>,
    /// Made by a [`Member`]: its watches select its buckets (even while it has all).
    partitioned: bool,
}

impl std::fmt::Debug for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Shard").field(&self.assignment()).finish()
    }
}

impl Default for Shard {
    fn default() -> Self {
        Self::whole()
    }
}

/// A reconcile's permission to run; while any is held, the member does not publish a
/// view that gives the parent away.
pub struct Admitted {
    _turn: OwnedRwLockReadGuard<()>,
}

impl Shard {
    /// Every parent: one replica alone, or the leader of a leader election.
    pub fn whole() -> Self {
        Self::with(Assignment::Whole)
    }

    fn with(assignment: Assignment) -> Self {
        let partitioned = assignment != Assignment::Whole;
        let selection = watch::Sender::new(Selection { epoch: 0, labels: Selection::of(&assignment) });
        Self(Arc::new(Inner {
            until: std::sync::Mutex::new(None),
            assignment: std::sync::RwLock::new(Arc::new(assignment)),
            turns: Arc::new(RwLock::new(())),
            grown: watch::Sender::new(0),
            selection,
            partitioned,
        }))
    }

    /// Whether this replica shares the parents with others, now or once they join: its
    /// watches then select its buckets, and the children it writes carry theirs.
    pub fn partitioned(&self) -> bool {
        self.0.partitioned
    }

    /// What this replica's watches of parents and children select, as it changes.
    pub fn selection(&self) -> watch::Receiver<Selection> {
        self.0.selection.subscribe()
    }

    /// Whether this replica's watches select `bucket`: its published view gives it the
    /// bucket (it may not own it yet, or any more, for the moment a view changes).
    pub fn selects(&self, bucket: Bucket) -> bool {
        match &*self.assignment() {
            Assignment::Whole => true,
            Assignment::Nothing => false,
            Assignment::Part(p) => owner(&p.view, bucket) == Some(p.me.as_str()),
        }
    }

    /// The epoch of the selection in force.
    pub(crate) fn epoch(&self) -> u64 {
        self.0.selection.borrow().epoch
    }

    /// Publishes the selection `assignment` makes, under a new epoch if it changed.
    fn select(&self, assignment: &Assignment) {
        let labels = Selection::of(assignment);
        self.0.selection.send_if_modified(|current| {
            let changed = current.labels != labels;
            if changed {
                *current = Selection { epoch: current.epoch + 1, labels };
            }
            changed
        });
    }

    fn assignment(&self) -> Arc<Assignment> {
        self.0.assignment.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set(&self, assignment: Assignment) {
        self.select(&assignment);
        let changed = {
            let mut current = self.0.assignment.write().unwrap_or_else(PoisonError::into_inner);
            let changed = **current != assignment;
            *current = Arc::new(assignment);
            changed
        };
        if changed {
            self.0.grown.send_modify(|n| *n += 1);
        }
    }

    /// Waits (at most `limit`) for the reconciles in flight to finish, then sets
    /// `assignment`; false, with nothing changed, when they did not finish in time.
    async fn narrow(&self, assignment: Assignment, limit: Duration) -> bool {
        let Ok(_drained) = tokio::time::timeout(limit, self.0.turns.write()).await else { return false };
        self.select(&assignment);
        *self.0.assignment.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(assignment);
        true
    }

    fn valid_until(&self, until: Instant) {
        *self.0.until.lock().unwrap_or_else(PoisonError::into_inner) = Some(until);
    }

    /// Whether this replica reconciles the parents of `bucket` now.
    pub fn owns(&self, bucket: Bucket) -> bool {
        let lapsed = self.0.until.lock().unwrap_or_else(PoisonError::into_inner).is_some_and(|u| Instant::now() >= u);
        !lapsed && self.assignment().owns(bucket)
    }

    /// A permission to reconcile a parent of `bucket`, held for the whole reconcile;
    /// `None` when another replica owns it (or none may, for now).
    pub async fn admit(&self, bucket: Bucket) -> Option<Admitted> {
        let turn = self.0.turns.clone().read_owned().await;
        self.owns(bucket).then_some(Admitted { _turn: turn })
    }

    /// Changes whenever parents may have been gained.
    pub(crate) fn grown(&self) -> watch::Receiver<u64> {
        self.0.grown.subscribe()
    }

    /// The members this replica hashes over now; empty when it reconciles nothing,
    /// `None` when it reconciles every parent (no sharding).
    pub fn members(&self) -> Option<Vec<String>> {
        match &*self.assignment() {
            Assignment::Whole => None,
            Assignment::Nothing => Some(Vec::new()),
            Assignment::Part(part) => Some(part.view.clone()),
        }
    }
}

/// What a replica may reconcile.
#[derive(Debug, PartialEq, Eq)]
enum Assignment {
    Whole,
    Nothing,
    Part(Part),
}

#[derive(Debug, PartialEq, Eq)]
struct Part {
    me: String,
    /// The view this member published.
    view: Vec<String>,
    /// While a new view is about to be published: only parents it gives this member too.
    next: Option<Vec<String>>,
    /// The views other live members published.
    others: Vec<(String, Vec<String>)>,
}

impl Assignment {
    fn owns(&self, bucket: Bucket) -> bool {
        match self {
            Self::Whole => true,
            Self::Nothing => false,
            Self::Part(p) => {
                let mine = |view: &[String]| owner(view, bucket) == Some(p.me.as_str());
                mine(&p.view)
                    && p.next.as_deref().is_none_or(mine)
                    && p.others.iter().all(|(other, view)| owner(view, bucket) != Some(other.as_str()))
            }
        }
    }
}

/// The member of `view` a bucket belongs to: the highest rendezvous weight of
/// (member, bucket). Only the buckets of a member that joins or leaves move.
pub fn owner(view: &[String], bucket: Bucket) -> Option<&str> {
    let key = bucket.label();
    view.iter().max_by_key(|member| (weight(member, &key), member.as_str())).map(String::as_str)
}

/// A hash that every replica, whatever its build, computes alike (std's `DefaultHasher`
/// may change between Rust releases, and replicas of two versions run side by side
/// during a rolling update): FNV-1a over both strings, then a 64-bit finalizer
/// (splitmix64's) so that similar names spread evenly.
pub(crate) fn weight(member: &str, key: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in member.bytes().chain([0]).chain(key.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// One replica of a group. Cheap to create; [`Member::spawn`] does the work.
#[derive(Clone)]
pub struct Member {
    /// This member's own Lease, named after the group and its identity.
    lease: Holder,
    group: String,
}

impl Member {
    /// A member named `identity` (unique per process: the Pod name) of `group`, whose
    /// Lease in `namespace` is named after both. Others take its parents over at most
    /// `lease_duration` (whole seconds, as a Lease stores it) plus two retry periods
    /// after it stopped renewing. The retry period defaults to a quarter of it.
    pub fn new(
        client: Client,
        namespace: &str,
        group: &str,
        identity: impl Into<String>,
        lease_duration: Duration,
    ) -> Self {
        let identity = identity.into();
        let subject = format!("shard group {group} in namespace {namespace}");
        let lease = Holder::new(client, namespace, &lease_name(group, &identity), identity, lease_duration, subject);
        Self { lease, group: group.to_string() }
    }

    /// How often the member renews its Lease and reads the others'.
    #[must_use]
    pub fn with_retry_period(mut self, retry_period: Duration) -> Self {
        self.lease.set_retry_period(retry_period);
        self
    }

    pub fn identity(&self) -> &str {
        self.lease.identity()
    }

    /// Takes part until `shutdown` resolves, keeping `shard` up to date; then stops
    /// admitting reconciles, waits for those in flight (for at most a lease duration),
    /// and deletes its Lease.
    ///
    /// # Errors
    ///
    /// Only when deleting the Lease fails; failures meanwhile are logged and retried.
    pub async fn run(self, shard: &Shard, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
        tokio::pin!(shutdown);
        let mut state =
            State { sightings: Sightings::default(), published: None, renewal: Renewal::new(self.lease.duration()) };
        shard.set(Assignment::Nothing);
        loop {
            let again = match self.round(&mut state, shard).await {
                Ok(again) => again,
                Err(e) => {
                    warn!(error = %e, identity = %self.identity(), "sharding: leases not read or written");
                    false
                }
            };
            if state.renewal.lapsed() {
                warn!(identity = %self.identity(), "could not renew the shard lease in time; reconciling nothing");
                shard.set(Assignment::Nothing);
            }
            let pause = if again { Duration::ZERO } else { self.lease.retry_period() };
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = &mut shutdown => break,
            }
        }
        if !shard.narrow(Assignment::Nothing, self.lease.duration()).await {
            // Admit nothing more either way; the others may take over a parent whose
            // reconcile here has not finished after a whole lease duration.
            warn!(identity = %self.identity(), "reconciles still running after a lease duration; leaving anyway");
            shard.set(Assignment::Nothing);
        }
        self.lease.delete().await?;
        info!(identity = %self.identity(), group = %self.group, "left the shard group");
        Ok(())
    }

    /// Runs [`Member::run`] on a background task.
    pub fn spawn(self) -> (Shard, Joined) {
        let shard = Shard::with(Assignment::Nothing);
        let task = Task::spawn("shard member", {
            let shard = shard.clone();
            |shutdown| async move { self.run(&shard, shutdown).await }
        });
        (shard, Joined { task })
    }

    /// One round: read every member's Lease, act on what the view published before
    /// gives, then renew, publishing the live members as the new view if they changed.
    /// True when a new view was published: read again at once to take up its parents.
    async fn round(&self, state: &mut State, shard: &Shard) -> Result<bool, Error> {
        let leases = self.lease.list(&format!("{GROUP_LABEL}={}", self.group)).await?;
        let mut mine = None;
        let mut live = BTreeSet::from([self.identity().to_string()]);
        let mut others = Vec::new();
        for lease in &leases {
            if lease.name_any() == self.lease.name() {
                mine = Some(lease.clone());
                continue;
            }
            if let Some(holder) = state.sightings.live_holder(lease, self.lease.duration())
                && holder != self.identity()
            {
                live.insert(holder.to_string());
                others.push((holder.to_string(), view_of(lease)));
            }
        }
        state.sightings.retain(|name| leases.iter().any(|l| l.name_any() == name));
        others.sort();

        // This list was read after our view was written: act on it, minus what others claim.
        let fresh = state.renewal.held();
        let me = self.identity().to_string();
        if let (Some(view), true) = (&state.published, fresh) {
            shard.set(Assignment::Part(Part {
                me: me.clone(),
                view: view.clone(),
                next: None,
                others: others.clone(),
            }));
        }

        let desired: Vec<String> = live.into_iter().collect();
        let mut publish = state.published.as_ref() != Some(&desired);
        if publish && let (Some(view), true) = (&state.published, fresh) {
            // Stop reconciling what the new view gives away before saying so.
            let narrowed = Assignment::Part(Part { me, view: view.clone(), next: Some(desired.clone()), others });
            publish = shard.narrow(narrowed, self.lease.retry_period()).await;
        }
        if !fresh {
            // After missing the renew deadline, claim nothing until the others see us again.
            shard.set(Assignment::Nothing);
        }
        let view = if publish { desired } else { state.published.clone().unwrap_or_default() };
        // Measured from before the request: the others see the write only after it.
        let sent = Instant::now();
        let written = self
            .lease
            .renew(mine, |lease| {
                lease.labels_mut().insert(GROUP_LABEL.to_string(), self.group.clone());
                lease
                    .annotations_mut()
                    .insert(VIEW_ANNOTATION.to_string(), serde_json::to_string(&view).unwrap_or_default());
            })
            .await?;
        if written.is_some() {
            state.renewal.renewed(sent);
            if let Some(until) = state.renewal.valid_until() {
                shard.valid_until(until);
            }
            if publish {
                info!(identity = %self.identity(), group = %self.group, members = ?view, "shard view published");
                state.published = Some(view);
                return Ok(true);
            }
        }
        Ok(false)
    }
}

struct State {
    /// When each other member's Lease last changed.
    sightings: Sightings,
    /// The view last written to this member's Lease.
    published: Option<Vec<String>>,
    /// When the last write of this member's Lease was sent.
    renewal: Renewal,
}

fn view_of(lease: &Lease) -> Vec<String> {
    lease.annotations().get(VIEW_ANNOTATION).and_then(|v| serde_json::from_str(v).ok()).unwrap_or_default()
}

/// `GROUP-IDENTITY`, made a valid object name: lower case, other characters as `-`.
fn lease_name(group: &str, identity: &str) -> String {
    let name: String = format!("{group}-{identity}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c.to_ascii_lowercase() } else { '-' })
        .collect();
    let name = name.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    name.chars().take(253).collect()
}

/// A running [`Member`], and how to stop it.
pub struct Joined {
    task: Task,
}

impl Joined {
    /// Stops admitting reconciles, waits for those in flight, and deletes the Lease,
    /// so the others take the parents over at their next round.
    ///
    /// # Errors
    ///
    /// When the Lease could not be deleted (the others then wait for it to expire).
    pub async fn leave(self) -> Result<(), Error> {
        self.task.finish().await
    }

    /// Stops without a word, as a crash would: the others take over once the Lease
    /// expires.
    pub fn abort(self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;

    fn members(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_string()).collect()
    }

    #[test]
    fn buckets_spread_evenly_over_the_members() {
        let view = members(&["host-a", "host-b", "host-c"]);
        let mut counts = HashMap::new();
        for bucket in Bucket::all() {
            *counts.entry(owner(&view, bucket).unwrap()).or_insert(0) += 1;
        }
        for member in &view {
            let n = counts[member.as_str()];
            assert!((300..=385).contains(&n), "{member} owns {n} of 1024 buckets: {counts:?}");
        }
    }

    #[test]
    fn parents_spread_evenly_over_the_buckets_and_keep_a_bucket_they_are_labelled_with() {
        let none = BTreeMap::new();
        let mut counts = HashMap::new();
        for i in 0..102_400 {
            let bucket =
                Bucket::of(&none, "demo.kubewasm.dev", "DemoApplication", Some("default"), &format!("app-{i}"));
            *counts.entry(bucket).or_insert(0) += 1;
        }
        assert_eq!(counts.len(), 1024, "every bucket used");
        assert!(counts.values().all(|n| (60..=140).contains(n)), "about 100 parents per bucket: {counts:?}");

        let labelled = BTreeMap::from([(BUCKET_LABEL.to_string(), "7".to_string())]);
        assert_eq!(Bucket::of(&labelled, "g", "K", None, "x"), Bucket(7), "the label decides");
        for wrong in ["1024", "07", "-1", "seven", ""] {
            let labelled = BTreeMap::from([(BUCKET_LABEL.to_string(), wrong.to_string())]);
            assert_eq!(Bucket::of(&labelled, "g", "K", None, "x"), Bucket::of(&none, "g", "K", None, "x"), "{wrong:?}");
        }
        assert_ne!(
            Bucket::of(&none, "g", "K", Some("a"), "x"),
            Bucket::of(&none, "g", "K", Some("b"), "x"),
            "the namespace counts (for these two)"
        );
    }

    #[test]
    fn a_member_joining_takes_buckets_only_from_others_and_only_its_share() {
        let before = members(&["host-a", "host-b"]);
        let after = members(&["host-a", "host-b", "host-c"]);
        let mut moved = 0;
        for bucket in Bucket::all() {
            let (was, is) = (owner(&before, bucket).unwrap(), owner(&after, bucket).unwrap());
            if was != is {
                assert_eq!(is, "host-c", "{bucket:?} moved from {was} to {is}, not to the newcomer");
                moved += 1;
            }
        }
        assert!((300..=385).contains(&moved), "{moved} of 1024 moved; a third expected");
    }

    #[test]
    fn a_bucket_claimed_by_another_live_member_is_not_reconciled() {
        let bucket = Bucket::all()
            .find(|b| owner(&members(&["a"]), *b) == Some("a") && owner(&members(&["a", "b"]), *b) == Some("b"))
            .expect("a bucket that moves to b");
        // a still hashes over itself alone; b already published a view that gives it the bucket.
        let alone = Part { me: "a".into(), view: members(&["a"]), next: None, others: Vec::new() };
        assert!(Assignment::Part(alone).owns(bucket));
        let contested = Part {
            me: "a".into(),
            view: members(&["a"]),
            next: None,
            others: vec![("b".into(), members(&["a", "b"]))],
        };
        assert!(!Assignment::Part(contested).owns(bucket), "b claims it: a keeps off");
        let leaving =
            Part { me: "a".into(), view: members(&["a"]), next: Some(members(&["a", "b"])), others: Vec::new() };
        assert!(!Assignment::Part(leaving).owns(bucket), "a's next view gives it away: a stops first");
    }

    #[test]
    fn a_member_selects_the_buckets_its_published_view_gives_it() {
        let part =
            |view: &[&str]| Assignment::Part(Part { me: "a".into(), view: members(view), next: None, others: vec![] });
        assert_eq!(Selection::of(&Assignment::Whole), None, "not sharded: everything");
        assert_eq!(Selection::of(&part(&["a"])), None, "alone: everything, labelled or not");
        assert_eq!(Selection::of(&Assignment::Nothing), Some(format!("{BUCKET_LABEL}=none")));
        let two = Selection::of(&part(&["a", "b"])).expect("a selector");
        let listed: Vec<Bucket> = two
            .strip_prefix(&format!("{BUCKET_LABEL} in ("))
            .and_then(|rest| rest.strip_suffix(')'))
            .expect("a set-based selector")
            .split(',')
            .map(|v| Bucket::parse(v).expect("a bucket"))
            .collect();
        let mine: Vec<Bucket> = Bucket::all().filter(|b| owner(&members(&["a", "b"]), *b) == Some("a")).collect();
        assert_eq!(listed, mine);

        let shard = Shard::with(Assignment::Nothing);
        let selection = shard.selection();
        assert_eq!(selection.borrow().epoch, 0);
        shard.set(part(&["a", "b"]));
        assert_eq!(*selection.borrow(), Selection { epoch: 1, labels: Some(two) });
        shard.set(part(&["a", "b"]));
        assert_eq!(selection.borrow().epoch, 1, "the same buckets: the same epoch, no relist");
        assert!(shard.partitioned() && !Shard::whole().partitioned());
    }

    #[test]
    fn lease_names_are_valid_object_names() {
        assert_eq!(lease_name("kubewasm", "Node_1-4242"), "kubewasm-node-1-4242");
    }
}
