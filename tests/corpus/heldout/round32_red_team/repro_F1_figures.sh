#!/bin/bash
# F1: a co-tenant's symbolic link in the --figures folder makes root's `grade check --figures` overwrite any file
# root can write (here: bob's result in a signed results folder -> grade export / grade report refuse the class).
set -x
A=/tmp/rt32/attack
rm -rf $A/out_fig && cp -a $A/out1 $A/out_fig                       # a results folder of root's (bob 600)
su rtuser -s /bin/bash -c "mkdir -p $A/user/figs2 && cd $A/user/figs2 && for e in attention_scores_for_query attention_scores_loop attention_scores softmax_naive softmax simple_self_attention; do ln -sf $A/out_fig/bob.json 01_attention_basics-\$e.png; done"
cd /tmp/rt/repo
/tmp/rt/venv/bin/grade export $A/out_fig | cut -d, -f1-3             # bob,600.0,600.0
/tmp/rt/venv/bin/grade check 01_attention_basics --submission $A/subs/f1_wrong01 --seed 3 --figures $A/user/figs2 | tail -1
file $A/out_fig/bob.json                                               # PNG image data
/tmp/rt/venv/bin/grade export $A/out_fig; echo "export rc=$?"          # refused: bob.json does not verify
/tmp/rt/venv/bin/grade report $A/out_fig; echo "report rc=$?"
