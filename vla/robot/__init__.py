"""What the simulator and a real arm both need of the robot, in the base layer so that the robot
path (real/) never imports sim/: the native arm's model and its EE-delta control convention
(`arm`), rotations (`rotations`), and each task's object features from published poses (`objects`)."""
