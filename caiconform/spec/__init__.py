"""The specification as data, and the validator that judges an export against it; no GPU.

The rule catalogue (`rules`, from `_cai` and `_emm`), which rule states each spec sentence
(`trace`), the typestr grammar (`typestr`), element types beyond its codes (`dtypes`) and the
example values made of them and compared bit for bit (`values`), layout arithmetic (`layout`),
the validator and its findings (`validate`, `findings`), the names of the check families and of
the adversarial family's live mutations (`families`), and which checks exercise each rule
(`rule_coverage`).
"""
