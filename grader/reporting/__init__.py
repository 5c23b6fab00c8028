"""What results become for people: each ``--format``, the class report, the results folder and the grade CSV."""
