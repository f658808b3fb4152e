//! ScienceWorld's 30 tasks (the package's `tasks.json`): id, simulator name, topic and title.

/// `(id, name, title)`, in the package's order.
pub const TASKS: &[(&str, &str, &str)] = &[
    ("1-1", "boil", "Matter: Changes of State (Boiling)"),
    ("1-2", "melt", "Matter: Changes of State (Melting)"),
    ("1-3", "freeze", "Matter: Changes of State (Freezing)"),
    (
        "1-4",
        "change-the-state-of-matter-of",
        "Matter: Changes of State (Any)",
    ),
    ("2-1", "use-thermometer", "Measurement: Use Thermometer"),
    (
        "2-2",
        "measure-melting-point-known-substance",
        "Measurement: Measuring Boiling Point (known)",
    ),
    (
        "2-3",
        "measure-melting-point-unknown-substance",
        "Measurement: Measuring Boiling Point (unknown)",
    ),
    ("3-1", "power-component", "Electricity: Create a circuit"),
    (
        "3-2",
        "power-component-renewable-vs-nonrenewable-energy",
        "Electricity: Renewable vs Non-renewable Energy",
    ),
    (
        "3-3",
        "test-conductivity",
        "Electricity: Test Conductivity (known)",
    ),
    (
        "3-4",
        "test-conductivity-of-unknown-substances",
        "Electricity: Test Conductivity (unknown)",
    ),
    (
        "4-1",
        "find-living-thing",
        "Classification: Find a living thing",
    ),
    (
        "4-2",
        "find-non-living-thing",
        "Classification: Find a non-living thing",
    ),
    ("4-3", "find-plant", "Classification: Find a plant"),
    ("4-4", "find-animal", "Classification: Find an animal"),
    ("5-1", "grow-plant", "Biology: Grow a plant"),
    ("5-2", "grow-fruit", "Biology: Grow a fruit"),
    ("6-1", "chemistry-mix", "Chemistry: Mixing (generic)"),
    (
        "6-2",
        "chemistry-mix-paint-secondary-color",
        "Chemistry: Mixing paints (secondary colours)",
    ),
    (
        "6-3",
        "chemistry-mix-paint-tertiary-color",
        "Chemistry: Mixing paints (tertiary colours)",
    ),
    (
        "7-1",
        "lifespan-longest-lived",
        "Biology: Identify longest-lived animal",
    ),
    (
        "7-2",
        "lifespan-shortest-lived",
        "Biology: Identify shortest-lived animal",
    ),
    (
        "7-3",
        "lifespan-longest-lived-then-shortest-lived",
        "Biology: Identify longest-then-shortest-lived animal",
    ),
    (
        "8-1",
        "identify-life-stages-1",
        "Biology: Identify life stages (plant)",
    ),
    (
        "8-2",
        "identify-life-stages-2",
        "Biology: Identify life stages (animal)",
    ),
    (
        "9-1",
        "inclined-plane-determine-angle",
        "Forces: Inclined Planes (determine angle)",
    ),
    (
        "9-2",
        "inclined-plane-friction-named-surfaces",
        "Forces: Friction (known surfaces)",
    ),
    (
        "9-3",
        "inclined-plane-friction-unnamed-surfaces",
        "Forces: Friction (unknown surfaces)",
    ),
    (
        "10-1",
        "mendelian-genetics-known-plant",
        "Biology: Mendelian Genetics (known plants)",
    ),
    (
        "10-2",
        "mendelian-genetics-unknown-plant",
        "Biology: Mendelian Genetics (unknown plants)",
    ),
];

/// The simplifications the simulator knows (`getPossibleSimplifications`), plus `easy` (all of
/// them but `noElectricalAction` on the electrical tasks).
pub const SIMPLIFICATIONS: &[&str] = &[
    "easy",
    "teleportAction",
    "selfWateringFlowerPots",
    "openContainers",
    "openDoors",
    "noElectricalAction",
];

/// The simulator's name for a task given by name (`boil`) or id (`1-1`, `task-1-1`); `None`
/// when it is neither.
pub fn task_name(name_or_id: &str) -> Option<&'static str> {
    let key = name_or_id.trim();
    let key = key.strip_prefix("task-").unwrap_or(key);
    let key = key.replace("mendellian", "mendelian");
    TASKS
        .iter()
        .find(|(id, name, _)| *id == key || *name == key)
        .map(|(_, name, _)| *name)
}

/// Whether the task needs `connect X to Y` (so `noElectricalAction` cannot be used).
pub fn is_electrical(name: &str) -> bool {
    name.contains("power-component") || name.contains("conductivity")
}

/// The template actions, in words, for the rules block (`getPossibleActionsWithIDs`).
pub const ACTION_TEMPLATES: &[&str] = &[
    "look around",
    "look at OBJ",
    "look in OBJ",
    "go to LOC",
    "teleport to LOC",
    "open OBJ",
    "close OBJ",
    "pick up OBJ",
    "put down OBJ",
    "move OBJ to OBJ",
    "pour OBJ in OBJ",
    "dunk OBJ in OBJ",
    "mix OBJ",
    "activate OBJ",
    "deactivate OBJ",
    "use OBJ on OBJ",
    "connect OBJ to OBJ",
    "disconnect OBJ",
    "eat OBJ",
    "flush OBJ",
    "read OBJ",
    "focus on OBJ",
    "wait",
    "wait1",
    "inventory",
    "task",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thirty_tasks_by_name_and_id() {
        assert_eq!(TASKS.len(), 30);
        assert_eq!(task_name("boil"), Some("boil"));
        assert_eq!(task_name("4-2"), Some("find-non-living-thing"));
        assert_eq!(task_name("task-1-1"), Some("boil"));
        assert_eq!(
            task_name("mendellian-genetics-known-plant"),
            Some("mendelian-genetics-known-plant")
        );
        assert_eq!(task_name("boiling"), None);
        assert!(is_electrical("test-conductivity"));
        assert!(!is_electrical("boil"));
    }
}
