"""The results layer: what a result means, for every layer that makes, judges or shows one.

It sits on `caiconform.spec` and below everything that runs an exchange or renders a report:

- `outcome`: the outcome classes and `Result`, the check-family contract;
- `record`: what a journal record holds (its required keys, the cell it belongs to, its
  coverage labels, the family-skip record) and `EXPECT_REJECTION`, the `expected` value that
  makes a rejection the right answer;
- `filing`: the rule a record is filed under; `severity`: how much harm it did;
- `catalogue`: records grouped into defects with their culprit;
- `expectations`: what a library declares it does; `baseline`: what it already knows about;
- `verdict`: what fails a library's CI and what is listed;
- `wording`: how a finding group reads, the same in the verdict and every report;
- `verification`: the standalone-verification statuses a group carries (`report.verify` records
  them) and the order findings and the verdict lead with.

Nothing is imported here, so `import caiconform.results.outcome` stays cheap for the workers.
"""
