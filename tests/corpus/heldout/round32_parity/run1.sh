#!/bin/bash
# usage: run1.sh NAME  (subs/NAME/assignments/<aid>/)
name=$1
P=/tmp/rt32/parity
aid=$(ls $P/subs/$name/assignments/)
sub=$P/subs/$name/assignments/$aid
export GRADE_TWINS=0
(cd $P/dist && PYTHONPATH=$P/dist /tmp/rt/venv/bin/python -m grader check $aid --submission $sub --seed 3 --format json > $P/out/$name.student.json 2> $P/out/$name.student.err)
(cd /tmp/rt/repo && /tmp/rt/venv/bin/python $P/instr_public.py $aid $sub 2024 > $P/out/$name.instructor.json 2> $P/out/$name.instructor.err)
(cd /tmp/rt/repo && /tmp/rt/venv/bin/python $P/instr_public.py $aid $sub 3 > $P/out/$name.instructor3.json 2> $P/out/$name.instructor3.err)
