//! `HorizontalPodAutoscalers` and `PodDisruptionBudgets`: what keeps a workload's pod count.

use serde_json::{Value, json};

use super::default_at;
use crate::printers::{Columns, age, age_column, column, int, name, name_column};
use crate::strategy::Strategy;

pub(crate) struct HorizontalPodAutoscalers;

impl Strategy for HorizontalPodAutoscalers {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "desiredReplicas": 0 });
    }

    /// `SetDefaults_HorizontalPodAutoscaler` of `autoscaling/v2`: one replica at least, and
    /// 80 % CPU when no metric is given. (Scaling behaviour is defaulted only when given,
    /// which is not done here.)
    fn defaults(&self, obj: &mut Value) {
        default_at(obj, "/spec", "minReplicas", json!(1));
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
            && spec.get("metrics").and_then(Value::as_array).is_none_or(Vec::is_empty)
        {
            spec.insert(
                "metrics".into(),
                json!([{ "type": "Resource", "resource": { "name": "cpu", "target": { "type": "Utilization", "averageUtilization": 80 } } }]),
            );
        }
    }
}

pub(crate) struct PodDisruptionBudgets;

impl Strategy for PodDisruptionBudgets {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0 });
    }

    fn columns(&self) -> Columns {
        Columns {
            defs: vec![
                name_column(),
                column("Min Available", "string", "The minimum number of pods that must be available.", 0),
                column("Max Unavailable", "string", "The maximum number of pods that may be unavailable.", 0),
                column(
                    "Allowed Disruptions",
                    "integer",
                    "Calculated number of pods that may be disrupted at this time.",
                    0,
                ),
                age_column(),
            ],
            cells: Box::new(|o| {
                let int_or_string = |p: &str| match o.pointer(p) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Number(n)) => n.to_string(),
                    _ => "N/A".to_string(),
                };
                vec![
                    name(o),
                    json!(int_or_string("/spec/minAvailable")),
                    json!(int_or_string("/spec/maxUnavailable")),
                    json!(int(o, "/status/disruptionsAllowed")),
                    age(o),
                ]
            }),
        }
    }
}
