# The Keras MNIST tutorial of multi-device training and fault tolerance
# (../shared/seeds/keras-mirrored-strategy-mnist-fault-tolerance.txt, printed there in R),
# in Python on chorus: a MirroredStrategy over chorus's devices, then a ModelCheckpoint
# every epoch and a second run that resumes from the latest checkpoint. The validation
# images are the last 10,000 training images (the R code draws them at random), as in
# examples/mnist_mlp.cc, the same program in C++.
import os
import re

from chorus import keras
from chorus import tf


def get_compiled_model():
    inputs = keras.Input(shape=(784,))
    x = keras.layers.Dense(256, activation="relu")(inputs)
    x = keras.layers.Dense(256, activation="relu")(x)
    outputs = keras.layers.Dense(10)(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
        # XLA compilation is temporarily disabled due to a bug
        # https://github.com/keras-team/keras/issues/19005
        jit_compile=False,
    )
    return model


def get_dataset(batch_size=64):
    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    x_train = x_train.reshape(-1, 784)
    x_test = x_test.reshape(-1, 784)
    # Reserve 10,000 samples for validation.
    x_val, y_val = x_train[-10000:], y_train[-10000:]
    x_train, y_train = x_train[:-10000], y_train[:-10000]
    # Prepare the training dataset.
    train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train)).batch(batch_size)
    # Prepare the validation dataset.
    val_dataset = tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(batch_size)
    # Prepare the test dataset.
    test_dataset = tf.data.Dataset.from_tensor_slices((x_test, y_test)).batch(batch_size)
    return train_dataset, val_dataset, test_dataset


# Create a MirroredStrategy.
strategy = tf.distribute.MirroredStrategy()
print(f"Number of devices: {strategy.num_replicas_in_sync}")

# Open a strategy scope.
with strategy.scope():
    # Everything that creates variables should be under the strategy scope.
    # In general this is only model construction & `compile()`.
    model = get_compiled_model()
    train_dataset, val_dataset, test_dataset = get_dataset()
    # Train the model on all available devices.
    model.fit(train_dataset, epochs=2, validation_data=val_dataset)
    # Test the model on all available devices.
    model.evaluate(test_dataset)

# Prepare a directory to store all the checkpoints.
checkpoint_dir = "./ckpt"
if not os.path.isdir(checkpoint_dir):
    os.makedirs(checkpoint_dir)


def make_or_restore_model():
    # Either restore the latest model, or create a fresh one
    # if there is no checkpoint available.
    checkpoints = os.listdir(checkpoint_dir)
    if checkpoints:
        checkpoint_epochs = [int(re.sub(r"ckpt-([0-9]+)\.keras", r"\1", name)) for name in checkpoints]
        latest_checkpoint = checkpoints[checkpoint_epochs.index(max(checkpoint_epochs))]
        return keras.models.load_model(os.path.join(checkpoint_dir, latest_checkpoint))
    return get_compiled_model()


def run_training(epochs=1):
    # Create a MirroredStrategy.
    strategy = tf.distribute.MirroredStrategy()
    # Open a strategy scope and create/restore the model
    with strategy.scope():
        model = make_or_restore_model()
        callbacks = [
            # This callback saves a SavedModel every epoch
            # We include the current epoch in the folder name.
            keras.callbacks.ModelCheckpoint(filepath=checkpoint_dir + "/ckpt-{epoch}.keras", save_freq="epoch")
        ]
        model.fit(train_dataset, epochs=epochs, callbacks=callbacks, validation_data=val_dataset, verbose=2)


# Running the first time creates the model
run_training(epochs=1)
# Calling the same function again will resume from where we left off
run_training(epochs=1)
