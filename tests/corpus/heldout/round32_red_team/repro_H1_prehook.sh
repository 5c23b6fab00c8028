#!/bin/bash
# H1: 01's softmax gradient computed by the library softmax (forbidden) in a grad_fn.register_prehook hook, which
# the static reading lets through and which runs in the grader's own backward pass, outside any tracer.
A=/tmp/rt32/attack
cd /tmp/rt/repo
for n in h1_honestwrong h1_prehook; do
  /tmp/rt/venv/bin/grade check 01_attention_basics --submission $A/subs/$n --seed 3 --format json > $A/$n.json
  python3 -c "
import json; d=json.load(open('$A/$n.json'))
print('$n', [(e['name'], e['score'], e['status']) for a in d['assignments'] for e in a['exercises'] if e['name']=='softmax'], d['score'])"
done
# batch beside bob, root then rtuser
rm -rf $A/out2 && /tmp/rt/venv/bin/grade autograde $A/class2 --out $A/out2 --seed 3 --workers 2 && cut -d, -f1-3 $A/out2/summary.csv
/tmp/rt/venv/bin/grade export $A/out2 | cut -d, -f1-4
su rtuser -s /bin/bash -c "cd $A/user/repo && rm -rf $A/user/out2 && /tmp/rt/venv/bin/grade autograde $A/user/class2 --out $A/user/out2 --seed 3 --workers 2 && cut -d, -f1-3 $A/user/out2/summary.csv"
