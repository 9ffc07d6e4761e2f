package queue

// OutcomesPerSlot is outcomesPerSlot, for the engine's slot tests.
const OutcomesPerSlot = outcomesPerSlot
