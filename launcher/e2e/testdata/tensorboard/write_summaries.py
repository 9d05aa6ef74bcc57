import sys, tensorflow as tf
d = sys.argv[1]
w = tf.summary.create_file_writer(d)
with w.as_default():
    for step in range(5):
        tf.summary.scalar("tfhive_loss", 1.0 / (step + 1), step=step)
w.flush()
